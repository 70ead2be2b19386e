//! Who may do what, keyed by the client certificate's name: Salt's `publisher_acl`, and
//! `client_acl` with the same entries as a user's list in Salt's `external_auth` (function
//! globs, `{minion glob: [function globs]}`, and `@runner`, `@wheel`, `@jobs`, each alone or
//! as `{'@runner': [runner globs]}`), plus a `runner_acl` of runner globs. Without any ACL every
//! client may do everything; once one is set, a client may manage keys only with `@wheel` and
//! run runners only with `@runner` (or a `runner_acl` entry; `@jobs` covers `jobs.*`). The
//! master's own `admin` certificate is never restricted (as root in Salt).
//!
//! A salt-api user ([`Caller::Eauth`]) is checked against their own `external_auth` entries
//! with Salt's eauth rules instead (`CkMinions.auth_check` and `spec_check`): function
//! entries are regular expressions matched at the start of the name, `{target: [...]}` entries
//! apply to the minions the target glob matches, and `@runner`, `@wheel`, `@<module>` grant
//! runner and wheel functions. Nothing is exempt, whatever the user's name.
//!
//! Firing an event (`EventService.FireEvent`, the `event.send` runner) follows `tags.rs`: the
//! right to fire any tag outside the master's namespaces is the right to run `event.send` (as
//! in Salt, where firing arbitrary tags takes that runner); without it a client fires only under
//! `salt/netapi/hook/`, as salt-api's `/hook` lets any authenticated user.

use std::collections::BTreeMap;

use saltq_semantics::python::fnmatch;
use serde::Deserialize;
use serde_json::{Map, Value};
use tonic::Status;

use crate::tags::{ClientRight, check_client_tag};

/// The runner that fires an event.
const EVENT_SEND: &str = "event.send";

/// One `publisher_acl` entry: a function glob for any target, or `{target_glob: [function
/// conditions]}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum AclEntry {
    /// Allowed on every minion.
    Fun(String),
    /// Allowed on minions whose id matches the key.
    Target(BTreeMap<String, Vec<FunCond>>),
}

/// A function condition of a target entry: a glob, or `{glob: {args: [...], kwargs: {...}}}`
/// (Salt's argument-restricted entry, its arguments checked with Salt's regexes).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum FunCond {
    /// Any call of the functions the glob matches.
    Glob(String),
    /// Calls of the functions the key matches whose arguments pass [`args_check`].
    Args(BTreeMap<String, Value>),
}

impl FunCond {
    /// Whether this condition allows `fun` called with `call`.
    fn allows(&self, fun: &str, call: CallArgs) -> bool {
        match self {
            FunCond::Glob(g) => fnmatch(fun, g),
            FunCond::Args(m) => {
                m.len() == 1
                    && m.iter()
                        .any(|(g, spec)| fnmatch(fun, g) && args_check(spec, call))
            }
        }
    }
}

/// `publisher_acl`: client name (or glob) → entries.
pub type PublisherAcl = BTreeMap<String, Vec<AclEntry>>;
/// `runner_acl`: client name (or glob) → runner globs.
pub type RunnerAcl = BTreeMap<String, Vec<String>>;

/// The ACLs.
#[derive(Debug, Clone, Default)]
pub struct Acl {
    /// Jobs, and `@`-permissions.
    pub publisher: Option<PublisherAcl>,
    /// Runners.
    pub runner: Option<RunnerAcl>,
    /// Salt's `external_auth` entries per client certificate (read with `publisher_acl`'s).
    pub client: Option<PublisherAcl>,
}

/// Who is asking: a client certificate, or a salt-api user authenticated by eauth.
#[derive(Debug, Clone, PartialEq)]
pub enum Caller {
    /// A client certificate's common name.
    Cert(String),
    /// A salt-api user.
    Eauth {
        /// The user name (the job load's `user`).
        user: String,
        /// How they proved it: `token` or `eauth` (named in Salt's refusals).
        auth_type: String,
        /// Their `external_auth` entries.
        perms: Vec<serde_json::Value>,
    },
}

impl Caller {
    /// The name recorded as the job's `user`.
    pub fn name(&self) -> &str {
        match self {
            Caller::Cert(n) => n,
            Caller::Eauth { user, .. } => user,
        }
    }
}

/// Salt's refusal of a job to an eauth user.
pub const EAUTH_AUTHORIZATION_ERROR: &str = "Authorization error occurred.";

/// Python's `re.match`: `pattern` matches at the start of `s`. A pattern that does not compile
/// matches nothing (Salt logs it and refuses).
fn re_match(pattern: &str, s: &str) -> bool {
    regex::Regex::new(&format!("^(?:{pattern})")).is_ok_and(|r| r.is_match(s))
}

/// A call's arguments as Salt's eauth checks (`__args_check`) see them.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallArgs<'a> {
    /// Positional arguments as sent, `key=value` strings included (Salt checks them as
    /// written; the minion parses them later).
    pub arg: &'a [Value],
    /// Keyword arguments; `None` when the call passes none, so every `kwargs` condition fails.
    pub kwarg: Option<&'a Map<String, Value>>,
}

/// Salt's `match_check` of one condition against a value: a string is `re.match`ed against
/// Python's `str()` of the value; any other condition matches nothing (Salt logs it and
/// refuses).
fn cond_match(cond: &Value, v: &Value) -> bool {
    match cond {
        Value::String(r) => re_match(r, &saltq_semantics::python::str(v)),
        _ => false,
    }
}

/// Salt's `__args_check`: `valid` is `{args: [...], kwargs: {...}}` or a list of them; one
/// must hold. `args[i]` must match the call's i-th positional argument (`null` matches any,
/// but the argument must be there); each `kwargs` key must be passed and match. Arguments the
/// condition does not name are not checked, as in Salt.
pub fn args_check(valid: &Value, call: CallArgs) -> bool {
    let conds: Vec<&Value> = match valid {
        Value::Array(a) => a.iter().collect(),
        v => vec![v],
    };
    conds.iter().any(|cond| {
        let Value::Object(cond) = cond else {
            return false;
        };
        let args_ok = match cond.get("args") {
            None => true,
            Some(Value::Array(want)) => want.iter().enumerate().all(|(i, c)| {
                call.arg
                    .get(i)
                    .is_some_and(|got| c.is_null() || cond_match(c, got))
            }),
            Some(_) => false,
        };
        let kwargs_ok = match cond.get("kwargs") {
            None => true,
            Some(Value::Object(want)) => want.iter().all(|(k, c)| {
                call.kwarg
                    .and_then(|kw| kw.get(k))
                    .is_some_and(|got| c.is_null() || cond_match(c, got))
            }),
            Some(_) => false,
        };
        args_ok && kwargs_ok
    })
}

/// Salt's `__fun_check`: a condition (or list of them) is a function regex, or a one-key
/// `{function regex: argument conditions}` whose arguments must pass [`args_check`].
pub fn fun_check(valid: &Value, fun: &str, call: CallArgs) -> bool {
    let conds: Vec<&Value> = match valid {
        Value::Array(a) => a.iter().collect(),
        v => vec![v],
    };
    conds.iter().any(|c| match c {
        Value::String(r) => re_match(r, fun),
        Value::Object(m) if m.len() == 1 => m
            .iter()
            .any(|(r, spec)| re_match(r, fun) && args_check(spec, call)),
        _ => false,
    })
}

/// Salt's `auth_check` for a job: every function (with its arguments, `args[i]` for
/// `funs[i]`) allowed on every minion, by a function regex, or by one `{target glob:
/// [conditions]}` entry whose glob matches every minion (Salt's `validate_tgt`).
fn eauth_publish(perms: &[Value], funs: &[String], args: &[CallArgs], minions: &[String]) -> bool {
    funs.iter().enumerate().all(|(i, fun)| {
        let call = args.get(i).copied().unwrap_or_default();
        perms.iter().any(|p| match p {
            Value::String(r) => !r.starts_with('@') && re_match(r, fun),
            Value::Object(m) if m.len() == 1 => m.iter().any(|(tgt, conds)| {
                !tgt.starts_with('@')
                    && minions.iter().all(|id| fnmatch(id, tgt))
                    && fun_check(conds, fun, call)
            }),
            _ => false,
        })
    })
}

/// Salt's `spec_check` for a runner or wheel function (`form`): `@runner`/`@wheel` (or
/// `@runners`), `@<module>`, or `{'@runner': [conditions]}`/`{'@<module>': [conditions]}`,
/// whose conditions may restrict the call's arguments as [`fun_check`]'s do.
fn eauth_spec(perms: &[Value], fun: &str, form: &str, call: CallArgs) -> bool {
    let Some((module, name)) = fun.split_once('.') else {
        return false;
    };
    let plural = format!("@{form}s");
    perms.iter().any(|p| match p {
        Value::String(s) => {
            s.strip_prefix('@')
                .is_some_and(|rest| rest == module || rest == form)
                || *s == plural
        }
        Value::Object(m) if m.len() == 1 => m.iter().any(|(k, conds)| {
            let Some(rest) = k.strip_prefix('@') else {
                return false;
            };
            (rest == module && fun_check(conds, name, call))
                || ((rest == form || *k == plural) && fun_check(conds, fun, call))
        }),
        _ => false,
    })
}

/// Salt's refusal of a runner or wheel function to an eauth user.
fn eauth_refused(user: &str, auth_type: &str) -> Status {
    Status::permission_denied(format!(
        "Authentication failure of type \"{auth_type}\" occurred for user {user}."
    ))
}

/// Checks the argument conditions of a `publisher_acl`/`client_acl` (the shape serde cannot
/// check): the error names the client, the function and what is wrong.
pub fn check_arg_specs(acl: Option<&PublisherAcl>) -> Result<(), String> {
    for (client, entries) in acl.into_iter().flatten() {
        for e in entries {
            let AclEntry::Target(m) = e else { continue };
            for (tgt, conds) in m {
                for c in conds {
                    let FunCond::Args(f) = c else { continue };
                    if f.len() != 1 {
                        return Err(format!(
                            "{client}: {tgt}: an argument-restricted entry names one function, not {}",
                            f.len()
                        ));
                    }
                    for (fun, spec) in f {
                        saltq_netapi::eauth::check_arg_spec(spec)
                            .map_err(|m| format!("{client}: {tgt}: {fun}: {m}"))?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The name of the master's own client certificate, never restricted.
pub const ADMIN: &str = "admin";

fn entries_for<'a, T>(acl: &'a BTreeMap<String, Vec<T>>, user: &str) -> Vec<&'a T> {
    acl.iter()
        .filter(|(who, _)| fnmatch(user, who))
        .flat_map(|(_, e)| e.iter())
        .collect()
}

/// Whether `entries` grant `perm` (`@runner`, `@wheel`, `@jobs`) for `fun`: the permission
/// alone grants every function, `{perm: [globs]}` those matching.
fn grants(entries: &[&AclEntry], perm: &str, fun: &str) -> bool {
    entries.iter().any(|e| match e {
        AclEntry::Fun(g) => g == perm,
        AclEntry::Target(m) => m
            .get(perm)
            .is_some_and(|conds| conds.iter().any(|c| c.allows(fun, CallArgs::default()))),
    })
}

impl Acl {
    /// Whether any ACL is set: without one, every client may do everything.
    fn any(&self) -> bool {
        self.publisher.is_some() || self.runner.is_some() || self.client.is_some()
    }

    /// The `publisher_acl` and `client_acl` entries of `user`.
    fn entries(&self, user: &str) -> Vec<&AclEntry> {
        let mut v = Vec::new();
        for acl in [&self.publisher, &self.client].into_iter().flatten() {
            v.extend(entries_for(acl, user));
        }
        v
    }

    /// May `user` manage keys with the wheel function `fun` (`key.accept`, ...)? Needs
    /// `@wheel` once any ACL is set.
    pub fn check_wheel(&self, user: &str, fun: &str) -> Result<(), Status> {
        if !self.any() || user == ADMIN || grants(&self.entries(user), "@wheel", fun) {
            return Ok(());
        }
        Err(Status::permission_denied(format!(
            "client {user} may not manage keys ({fun}): that needs @wheel in its publisher_acl \
             or client_acl entry"
        )))
    }

    /// May `user` read the job cache with `fun` (`jobs.lookup_jid`, `jobs.list_jobs`)? Needs
    /// `@jobs` or `@runner` (or a `runner_acl` entry for it) once any ACL is set.
    pub fn check_jobs(&self, user: &str, fun: &str) -> Result<(), Status> {
        if !self.any() || user == ADMIN || grants(&self.entries(user), "@jobs", fun) {
            return Ok(());
        }
        self.check_runner(user, fun).map_err(|_| {
            Status::permission_denied(format!(
                "client {user} may not read the job cache ({fun}): that needs @jobs or @runner \
                 in its publisher_acl or client_acl entry"
            ))
        })
    }

    /// May `user` run every one of `funs` (with its arguments, `args[i]` for `funs[i]`) on
    /// every one of `minions`?
    pub fn check_publish(
        &self,
        user: &str,
        funs: &[String],
        args: &[CallArgs],
        minions: &[String],
    ) -> Result<(), Status> {
        if (self.publisher.is_none() && self.client.is_none()) || user == ADMIN {
            return Ok(());
        }
        let entries = self.entries(user);
        if entries.is_empty() {
            return Err(Status::permission_denied(format!(
                "publisher_acl: client {user} has no entry, so it may not publish jobs"
            )));
        }
        for (i, fun) in funs.iter().enumerate() {
            let call = args.get(i).copied().unwrap_or_default();
            for id in minions {
                let allowed = entries.iter().any(|e| match e {
                    AclEntry::Fun(g) => fnmatch(fun, g),
                    AclEntry::Target(m) => m.iter().any(|(tgt, fs)| {
                        fnmatch(id, tgt) && fs.iter().any(|c| c.allows(fun, call))
                    }),
                });
                if !allowed {
                    return Err(Status::permission_denied(format!(
                        "publisher_acl: client {user} may not run {fun} on {id}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// May `user` run runner `fun`? A `runner_acl` glob, or `@runner` (`@jobs` for `jobs.*`)
    /// in `publisher_acl`/`client_acl`.
    pub fn check_runner(&self, user: &str, fun: &str) -> Result<(), Status> {
        if !self.any() || user == ADMIN {
            return Ok(());
        }
        let by_runner_acl = self
            .runner
            .as_ref()
            .is_some_and(|acl| entries_for(acl, user).iter().any(|g| fnmatch(fun, g)));
        let entries = self.entries(user);
        let by_perm = grants(&entries, "@runner", fun)
            || (fun.starts_with("jobs.") && grants(&entries, "@jobs", fun));
        if by_runner_acl || by_perm {
            return Ok(());
        }
        Err(Status::permission_denied(if self.runner.is_some() {
            format!("runner_acl: client {user} may not run runner {fun}")
        } else {
            format!(
                "client {user} may not run runner {fun}: that needs @runner (or a runner_acl \
                 entry) in its publisher_acl or client_acl entry"
            )
        }))
    }
}

impl Acl {
    /// May `who` run every one of `funs` (with `args[i]` for `funs[i]`) on every one of
    /// `minions`?
    pub fn publish(
        &self,
        who: &Caller,
        funs: &[String],
        args: &[CallArgs],
        minions: &[String],
    ) -> Result<(), Status> {
        match who {
            Caller::Cert(name) => self.check_publish(name, funs, args, minions),
            Caller::Eauth { perms, .. } => {
                if eauth_publish(perms, funs, args, minions) {
                    Ok(())
                } else {
                    Err(Status::permission_denied(EAUTH_AUTHORIZATION_ERROR))
                }
            }
        }
    }

    /// May `who` run runner `fun` with `call`'s arguments?
    pub fn runner(&self, who: &Caller, fun: &str, call: CallArgs) -> Result<(), Status> {
        match who {
            Caller::Cert(name) => self.check_runner(name, fun)?,
            Caller::Eauth {
                user,
                auth_type,
                perms,
            } => {
                if !eauth_spec(perms, fun, "runner", call) {
                    return Err(eauth_refused(user, auth_type));
                }
            }
        }
        if fun == EVENT_SEND {
            self.event_send_tag(who, call)?;
        }
        Ok(())
    }

    /// `event.send` run by a caller who may run it: its tag, bound from the call's arguments as
    /// the runner binds them, must be outside the master's namespaces (the `admin` certificate
    /// excepted). Arguments that do not bind fire nothing: the runner fails on them itself.
    fn event_send_tag(&self, who: &Caller, call: CallArgs) -> Result<(), Status> {
        let Some(spec) = crate::runners::table()
            .into_iter()
            .find(|r| r.spec.name == EVENT_SEND)
            .map(|r| &r.spec)
        else {
            return Ok(());
        };
        let bound = spec.bind(call.arg.to_vec(), call.kwarg.cloned().unwrap_or_default());
        let Some(tag) = bound
            .ok()
            .and_then(|a| a.str("tag"))
            .filter(|t| !t.is_empty())
        else {
            return Ok(());
        };
        let right = match who {
            Caller::Cert(name) if name == ADMIN => ClientRight::Admin,
            _ => ClientRight::EventSend,
        };
        check_client_tag(who.name(), right, &tag).map_err(Status::permission_denied)
    }

    /// May `who` call wheel function `fun` with `call`'s arguments?
    pub fn wheel(&self, who: &Caller, fun: &str, call: CallArgs) -> Result<(), Status> {
        match who {
            Caller::Cert(name) => self.check_wheel(name, fun),
            Caller::Eauth {
                user,
                auth_type,
                perms,
            } => {
                if eauth_spec(perms, fun, "wheel", call) {
                    Ok(())
                } else {
                    Err(eauth_refused(user, auth_type))
                }
            }
        }
    }

    /// What `who` may fire besides `salt/netapi/hook/`: the `admin` certificate anything, a
    /// caller who may run `event.send` (checked with `call`'s arguments) any tag outside the
    /// master's namespaces.
    fn event_right(&self, who: &Caller, call: CallArgs) -> ClientRight {
        let may_send = match who {
            Caller::Cert(name) if name == ADMIN => return ClientRight::Admin,
            Caller::Cert(name) => self.check_runner(name, EVENT_SEND).is_ok(),
            Caller::Eauth { perms, .. } => eauth_spec(perms, EVENT_SEND, "runner", call),
        };
        if may_send {
            ClientRight::EventSend
        } else {
            ClientRight::HookOnly
        }
    }

    /// May `who` fire `tag` (`EventService.FireEvent`)? The refusal names the tag and the rule.
    pub fn fire(&self, who: &Caller, tag: &str) -> Result<(), Status> {
        let arg = [Value::String(tag.to_owned())];
        let call = CallArgs {
            arg: &arg,
            kwarg: None,
        };
        check_client_tag(who.name(), self.event_right(who, call), tag)
            .map_err(Status::permission_denied)
    }

    /// May `who` read the job cache with `fun` (a `jobs.*` runner)?
    pub fn jobs(&self, who: &Caller, fun: &str) -> Result<(), Status> {
        match who {
            Caller::Cert(name) => self.check_jobs(name, fun),
            Caller::Eauth { .. } => self.runner(who, fun, CallArgs::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn publisher_and_runner_rules() {
        let publisher: PublisherAcl = serde_yaml_ng::from_str(
            "alice:\n  - test.*\n  - 'web*':\n    - cmd.run\nops*:\n  - '*'\n",
        )
        .unwrap();
        let runner: RunnerAcl = serde_yaml_ng::from_str("alice: [jobs.*]\n").unwrap();
        let acl = Acl {
            publisher: Some(publisher),
            runner: Some(runner),
            client: None,
        };
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(
            acl.check_publish("alice", &s(&["test.ping"]), &[], &s(&["db1", "web1"]))
                .is_ok()
        );
        assert!(
            acl.check_publish("alice", &s(&["cmd.run"]), &[], &s(&["web1"]))
                .is_ok()
        );
        let e = acl
            .check_publish("alice", &s(&["cmd.run"]), &[], &s(&["web1", "db1"]))
            .unwrap_err();
        assert_eq!(
            e.message(),
            "publisher_acl: client alice may not run cmd.run on db1"
        );
        assert!(
            acl.check_publish("ops-bob", &s(&["pkg.install"]), &[], &s(&["db1"]))
                .is_ok()
        );
        assert!(
            acl.check_publish("mallory", &s(&["test.ping"]), &[], &s(&["db1"]))
                .is_err()
        );
        assert!(
            acl.check_publish(ADMIN, &s(&["cmd.run"]), &[], &s(&["db1"]))
                .is_ok()
        );
        assert!(acl.check_runner("alice", "jobs.lookup_jid").is_ok());
        assert_eq!(
            acl.check_runner("alice", "manage.down")
                .unwrap_err()
                .message(),
            "runner_acl: client alice may not run runner manage.down"
        );
    }

    /// Issue 15, defect 4: a client limited to pinging may neither manage keys nor run
    /// runners; `@wheel`, `@runner` and `@jobs` (alone or with globs) grant them.
    #[test]
    fn keys_and_runners_need_their_permissions_once_an_acl_is_set() {
        let publisher: PublisherAcl = serde_yaml_ng::from_str(
            "bob: ['test.*']
",
        )
        .unwrap();
        let client: PublisherAcl = serde_yaml_ng::from_str(concat!(
            "ops: ['@wheel', '@runner']\n",
            "reader: ['@jobs']\n",
            "keyviewer:\n  - '@wheel': [key.list*, key.finger]\n",
            "manager:\n  - '@runner': ['manage.*']\n",
        ))
        .unwrap();
        let acl = Acl {
            publisher: Some(publisher),
            runner: None,
            client: Some(client),
        };
        let e = acl.check_wheel("bob", "key.accept").unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert_eq!(
            e.message(),
            "client bob may not manage keys (key.accept): that needs @wheel in its publisher_acl or client_acl entry"
        );
        let e = acl.check_runner("bob", "manage.status").unwrap_err();
        assert_eq!(
            e.message(),
            "client bob may not run runner manage.status: that needs @runner (or a runner_acl entry) in its publisher_acl or client_acl entry"
        );
        assert!(acl.check_jobs("bob", "jobs.lookup_jid").is_err());
        assert!(acl.check_wheel("ops", "key.accept").is_ok());
        assert!(acl.check_runner("ops", "manage.status").is_ok());
        assert!(acl.check_jobs("ops", "jobs.list_jobs").is_ok());
        assert!(acl.check_jobs("reader", "jobs.lookup_jid").is_ok());
        assert!(acl.check_runner("reader", "jobs.active").is_ok());
        assert!(acl.check_runner("reader", "manage.status").is_err());
        assert!(acl.check_wheel("keyviewer", "key.list_all").is_ok());
        assert!(acl.check_wheel("keyviewer", "key.finger").is_ok());
        assert!(acl.check_wheel("keyviewer", "key.accept").is_err());
        assert!(acl.check_runner("manager", "manage.down").is_ok());
        assert!(acl.check_runner("manager", "cache.grains").is_err());
        // Pinging still works for bob, and nothing for a client without an entry.
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(
            acl.check_publish("bob", &s(&["test.ping"]), &[], &s(&["m1"]))
                .is_ok()
        );
        assert!(
            acl.check_publish("ops", &s(&["test.ping"]), &[], &s(&["m1"]))
                .is_err()
        );
        // The admin certificate keeps everything; without any ACL, so does everyone.
        assert!(acl.check_wheel(ADMIN, "key.delete").is_ok());
        let open = Acl::default();
        assert!(open.check_wheel("bob", "key.delete").is_ok());
        assert!(open.check_runner("bob", "manage.status").is_ok());
    }

    /// salt-api users are checked with Salt's eauth rules: regexes matched at the start of
    /// the function, target globs, `@runner`/`@wheel`/`@<module>`; no name is exempt.
    #[test]
    fn eauth_users_follow_salts_rules() {
        let perms: Vec<serde_json::Value> = serde_yaml_ng::from_str(concat!(
            "- test.ping\n",
            "- 'web*': ['cmd.*', {'pkg.install': {args: ['nginx']}}]\n",
            "- '@manage'\n",
            "- '@wheel': ['key.list.*']\n",
        ))
        .unwrap();
        let who = |name: &str| Caller::Eauth {
            user: name.into(),
            auth_type: "token".into(),
            perms: perms.clone(),
        };
        let acl = Acl::default();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let bob = who("bob");
        assert!(
            acl.publish(&bob, &s(&["test.ping"]), &[], &s(&["db1", "web1"]))
                .is_ok()
        );
        // A regex matches at the start: test.ping_x is allowed as in Salt.
        assert!(
            acl.publish(&bob, &s(&["test.pingx"]), &[], &s(&["db1"]))
                .is_ok()
        );
        assert!(
            acl.publish(&bob, &s(&["cmd.run"]), &[], &s(&["web1", "web2"]))
                .is_ok()
        );
        let e = acl
            .publish(&bob, &s(&["cmd.run"]), &[], &s(&["web1", "db1"]))
            .unwrap_err();
        assert_eq!(e.message(), "Authorization error occurred.");
        // An argument-restricted entry does not grant the call without checking arguments.
        assert!(
            acl.publish(&bob, &s(&["pkg.install"]), &[], &s(&["web1"]))
                .is_err()
        );
        assert!(
            acl.runner(&bob, "manage.status", CallArgs::default())
                .is_ok()
        );
        let e = acl
            .runner(&bob, "jobs.list_jobs", CallArgs::default())
            .unwrap_err();
        assert_eq!(
            e.message(),
            "Authentication failure of type \"token\" occurred for user bob."
        );
        assert!(acl.jobs(&bob, "jobs.list_jobs").is_err());
        assert!(acl.wheel(&bob, "key.list_all", CallArgs::default()).is_ok());
        assert!(acl.wheel(&bob, "key.accept", CallArgs::default()).is_err());
        // An eauth user called admin is not the admin certificate.
        let admin = who(ADMIN);
        assert!(
            acl.publish(&admin, &s(&["cmd.run"]), &[], &s(&["db1"]))
                .is_err()
        );
        let all = Caller::Eauth {
            user: "alice".into(),
            auth_type: "eauth".into(),
            perms: serde_yaml_ng::from_str("['.*', '@runner', '@wheel', '@jobs']").unwrap(),
        };
        assert!(
            acl.publish(&all, &s(&["cmd.run"]), &[], &s(&["db1"]))
                .is_ok()
        );
        assert!(
            acl.runner(&all, "jobs.lookup_jid", CallArgs::default())
                .is_ok()
        );
        assert!(acl.wheel(&all, "key.delete", CallArgs::default()).is_ok());
        // A certificate keeps the certificate rules.
        assert!(
            acl.publish(
                &Caller::Cert("anyone".into()),
                &s(&["cmd.run"]),
                &[],
                &s(&["db1"])
            )
            .is_ok()
        );
    }

    fn yaml(y: &str) -> Value {
        serde_yaml_ng::from_str(y).unwrap()
    }

    /// Salt's `__args_check`: each named position must be present and `re.match` Python's
    /// `str()` of the argument (so a prefix is enough, as in Salt); `null` matches anything
    /// present; named kwargs must be passed; arguments not named are not checked.
    #[test]
    fn argument_conditions_follow_salts_args_check() {
        let brief = "{args: ['ls.*'], kwargs: {cwd: /tmp}}";
        let cases: &[(&str, &str, Option<&str>, bool)] = &[
            (brief, "['ls -l /']", Some("{cwd: /tmp}"), true),
            (brief, "['ls']", None, false),
            (brief, "['id']", Some("{cwd: /tmp}"), false),
            (brief, "[]", Some("{cwd: /tmp}"), false),
            (brief, "['ls']", Some("{cwd: /}"), false),
            (brief, "['ls']", Some("{other: /tmp}"), false),
            // Prefix matches, and arguments the condition does not name, pass as in Salt.
            (
                brief,
                "['lsblk', 'x']",
                Some("{cwd: /tmpfoo, env: {}}"),
                true,
            ),
            ("{args: [null, 'b']}", "['anything', 'b']", None, true),
            ("{args: [null, 'b']}", "['x']", None, false),
            ("[{args: ['a']}, {args: ['b']}]", "['b']", None, true),
            ("[{args: ['a']}, {args: ['b']}]", "['c']", None, false),
            // Python's str() of the argument: 5, True, a list.
            ("{kwargs: {n: '5'}}", "[]", Some("{n: 5}"), true),
            ("{args: ['True']}", "[true]", None, true),
            ("{args: ['\\[1, 2\\]']}", "[[1, 2]]", None, true),
            ("{}", "[]", None, true),
            ("{kwargs: {n: null}}", "[]", Some("{n: 1}"), true),
            ("{kwargs: {n: null}}", "[]", None, false),
            // Not a mapping, or a condition that is not a string: nothing matches.
            ("'ls'", "['ls']", None, false),
            ("{args: [5]}", "[5]", None, false),
            ("{args: ['(']}", "['(']", None, false),
        ];
        for (cond, arg, kwarg, want) in cases {
            let arg: Vec<Value> = serde_yaml_ng::from_str(arg).unwrap();
            let kwarg: Option<Map<String, Value>> =
                kwarg.map(|k| serde_yaml_ng::from_str(k).unwrap());
            let call = CallArgs {
                arg: &arg,
                kwarg: kwarg.as_ref(),
            };
            assert_eq!(
                args_check(&yaml(cond), call),
                *want,
                "{cond} with {arg:?} {kwarg:?}"
            );
        }
        let conds = yaml("[test.*, {cmd.run: {args: ['ls.*']}}, {a.b: {args: [x]}, c.d: {}}]");
        let ls = [json!("ls")];
        let rm = [json!("rm")];
        let with = |arg| CallArgs { arg, kwarg: None };
        assert!(fun_check(&conds, "test.ping", CallArgs::default()));
        assert!(fun_check(&conds, "cmd.run", with(&ls)));
        assert!(!fun_check(&conds, "cmd.run", with(&rm)));
        assert!(!fun_check(&conds, "cmd.run", CallArgs::default()));
        // A mapping of two functions is not a condition (Salt skips it).
        assert!(!fun_check(&conds, "c.d", CallArgs::default()));
    }

    /// Argument-restricted entries through every door: salt-api users' jobs, runners and
    /// wheels, and certificates' `publisher_acl` target entries.
    #[test]
    fn argument_restricted_entries_grant_only_matching_calls() {
        let perms: Vec<Value> = serde_yaml_ng::from_str(concat!(
            "- '*': [{cmd.run: {args: ['ls.*'], kwargs: {cwd: /tmp}}}]\n",
            "- 'web*': [test.echo]\n",
            "- 'db*': [test.echo]\n",
            "- '@runner': [{jobs.lookup_jid: {kwargs: {jid: '2026.*'}}}]\n",
            "- '@key': [{list: {args: [accepted]}}]\n",
        ))
        .unwrap();
        let carol = Caller::Eauth {
            user: "carol".into(),
            auth_type: "token".into(),
            perms,
        };
        let acl = Acl::default();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let cwd: Map<String, Value> = serde_yaml_ng::from_str("{cwd: /tmp}").unwrap();
        let ls = [json!("ls -l")];
        let id = [json!("id")];
        let call = |arg, kwarg| [CallArgs { arg, kwarg }];
        let run = s(&["cmd.run"]);
        let m = s(&["m1", "web1"]);
        assert!(
            acl.publish(&carol, &run, &call(&ls, Some(&cwd)), &m)
                .is_ok()
        );
        let e = acl
            .publish(&carol, &run, &call(&id, Some(&cwd)), &m)
            .unwrap_err();
        assert_eq!(e.message(), EAUTH_AUTHORIZATION_ERROR);
        assert!(acl.publish(&carol, &run, &call(&ls, None), &m).is_err());
        // One entry must cover every minion (Salt's validate_tgt), not one entry each.
        let echo = s(&["test.echo"]);
        assert!(
            acl.publish(&carol, &echo, &[], &s(&["web1", "web2"]))
                .is_ok()
        );
        assert!(
            acl.publish(&carol, &echo, &[], &s(&["web1", "db1"]))
                .is_err()
        );
        let jid: Map<String, Value> = serde_yaml_ng::from_str("{jid: '20260101'}").unwrap();
        let old: Map<String, Value> = serde_yaml_ng::from_str("{jid: '20250101'}").unwrap();
        let kw = |k| CallArgs {
            arg: &[],
            kwarg: Some(k),
        };
        assert!(acl.runner(&carol, "jobs.lookup_jid", kw(&jid)).is_ok());
        assert!(acl.runner(&carol, "jobs.lookup_jid", kw(&old)).is_err());
        assert!(acl.runner(&carol, "jobs.list_jobs", kw(&jid)).is_err());
        let accepted = [json!("accepted")];
        let pos = |arg| CallArgs { arg, kwarg: None };
        assert!(acl.wheel(&carol, "key.list", pos(&accepted)).is_ok());
        assert!(acl.wheel(&carol, "key.list", pos(&id)).is_err());
        assert!(acl.wheel(&carol, "key.accept", pos(&accepted)).is_err());

        let publisher: PublisherAcl = serde_yaml_ng::from_str(concat!(
            "ci:\n",
            "  - 'web*':\n",
            "    - test.*\n",
            "    - cmd.*: {args: ['systemctl status .*']}\n",
        ))
        .unwrap();
        let acl = Acl {
            publisher: Some(publisher),
            runner: None,
            client: None,
        };
        let status = [json!("systemctl status nginx")];
        let restart = [json!("systemctl restart nginx")];
        let web = s(&["web1"]);
        assert!(
            acl.check_publish("ci", &run, &call(&status, None), &web)
                .is_ok()
        );
        let e = acl
            .check_publish("ci", &run, &call(&restart, None), &web)
            .unwrap_err();
        assert_eq!(
            e.message(),
            "publisher_acl: client ci may not run cmd.run on web1"
        );
        assert!(
            acl.check_publish("ci", &s(&["test.ping"]), &[], &web)
                .is_ok()
        );
        assert_eq!(check_arg_specs(acl.publisher.as_ref()), Ok(()));
        let bad: PublisherAcl =
            serde_yaml_ng::from_str("ci:\n  - 'web*': [{cmd.run: {args: 'ls'}}]\n").unwrap();
        assert_eq!(
            check_arg_specs(Some(&bad)),
            Err("ci: web*: cmd.run: args must be a list, not \"ls\"".into())
        );
    }
    /// Firing events (`FireEvent`, `event.send`): the admin certificate fires anything; the right
    /// to run `event.send` fires anything outside the master's namespaces; everyone else only
    /// under `salt/netapi/hook/`.
    #[test]
    fn firing_needs_event_send_outside_the_hook_and_never_reaches_the_masters_tags() {
        let cert = |n: &str| Caller::Cert(n.into());
        let tag = |t: &str| [json!(t)];
        let denied = |r: Result<(), Status>, needle: &str| {
            let e = r.expect_err(needle);
            assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
            assert!(e.message().contains(needle), "{e:?}");
        };
        // Without an ACL every client may run event.send, so anything but the master's tags.
        let open = Acl::default();
        assert!(open.fire(&cert("nobody"), "myapp/x").is_ok());
        assert!(open.fire(&cert("nobody"), "salt/netapi/hook/x").is_ok());
        for t in [
            "salt/minion/db1/start",
            "salt/auth",
            "Salt//auth",
            "salt/job/1/ret/db1",
        ] {
            denied(
                open.fire(&cert("nobody"), t),
                "only the master's admin certificate",
            );
            assert!(open.fire(&cert(ADMIN), t).is_ok(), "{t}");
        }
        let acl = Acl {
            publisher: Some(
                serde_yaml_ng::from_str("alice: ['@runner']\ncarol: ['test.*']\n").unwrap(),
            ),
            runner: Some(serde_yaml_ng::from_str("bob: ['event.*']\n").unwrap()),
            client: None,
        };
        for who in ["alice", "bob"] {
            assert!(acl.fire(&cert(who), "myapp/x").is_ok(), "{who}");
            denied(
                acl.fire(&cert(who), "salt/minion/db1/start"),
                "belong to the minions",
            );
        }
        for who in ["carol", "nobody"] {
            assert!(acl.fire(&cert(who), "salt/netapi/hook/x").is_ok(), "{who}");
            denied(
                acl.fire(&cert(who), "myapp/x"),
                "without the right to run the event.send runner",
            );
        }
        // The event.send runner: its tag bound as the runner binds it, positional or keyword.
        let call = |arg: &[Value], kw: Option<&Map<String, Value>>| {
            acl.runner(&cert("alice"), "event.send", CallArgs { arg, kwarg: kw })
        };
        assert!(call(&tag("myapp/x"), None).is_ok());
        denied(
            call(&tag("salt/minion/db1/start"), None),
            "belong to the minions",
        );
        let kw = json!({"tag": "Salt//auth"});
        denied(call(&[], kw.as_object()), "belong to the master");
        let packed = [json!({"__kwarg__": true, "tag": "salt/key"})];
        denied(call(&packed, None), "belong to the master");
        // Arguments that do not bind fire nothing; the runner reports them.
        assert!(call(&[], None).is_ok());
        assert!(
            acl.runner(
                &cert(ADMIN),
                "event.send",
                CallArgs {
                    arg: &tag("salt/auth"),
                    kwarg: None
                }
            )
            .is_ok()
        );
        denied(
            acl.runner(
                &cert("carol"),
                "event.send",
                CallArgs {
                    arg: &tag("myapp/x"),
                    kwarg: None,
                },
            ),
            "may not run runner event.send",
        );
        // A salt-api user: @runner grants event.send; arguments may restrict the tags.
        let eauth = |perms: &str| Caller::Eauth {
            user: "dave".into(),
            auth_type: "token".into(),
            perms: serde_yaml_ng::from_str(perms).unwrap(),
        };
        let runner = eauth("['@runner']");
        assert!(open.fire(&runner, "myapp/x").is_ok());
        denied(open.fire(&runner, "salt/auth"), "belong to the master");
        denied(
            open.runner(
                &runner,
                "event.send",
                CallArgs {
                    arg: &tag("salt/auth"),
                    kwarg: None,
                },
            ),
            "belong to the master",
        );
        let some = eauth("[{'@runner': [{'event.send': {args: ['myapp/']}}]}]");
        assert!(open.fire(&some, "myapp/x").is_ok());
        denied(
            open.fire(&some, "other/x"),
            "without the right to run the event.send runner",
        );
        let none = eauth("['test.*']");
        assert!(open.fire(&none, "salt/netapi/hook/x").is_ok());
        denied(
            open.fire(&none, "myapp/x"),
            "without the right to run the event.send runner",
        );
    }
}
