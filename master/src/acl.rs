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

use std::collections::BTreeMap;

use saltq_semantics::python::fnmatch;
use serde::Deserialize;
use tonic::Status;

/// One `publisher_acl` entry: a function glob for any target, or `{target_glob: [function globs]}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum AclEntry {
    /// Allowed on every minion.
    Fun(String),
    /// Allowed on minions whose id matches the key.
    Target(BTreeMap<String, Vec<String>>),
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

/// Salt's `__fun_check` without arguments: a condition (or list of them) is a function regex,
/// or `{regex: {args, kwargs}}`; argument-restricted conditions are not checked against the
/// call's arguments here, so they only grant a call that restricts nothing.
fn fun_check(valid: &serde_json::Value, fun: &str) -> bool {
    use serde_json::Value;
    let conds: Vec<&Value> = match valid {
        Value::Array(a) => a.iter().collect(),
        v => vec![v],
    };
    conds.iter().any(|c| match c {
        Value::String(r) => re_match(r, fun),
        Value::Object(m) => m.iter().any(|(r, spec)| {
            re_match(r, fun)
                && spec
                    .as_object()
                    .is_none_or(|o| o.values().all(|v| v.is_null()))
        }),
        _ => false,
    })
}

/// Salt's `auth_check` for a job: every function allowed on every minion, by a function regex
/// or a `{target glob: [conditions]}` entry matching the minion.
fn eauth_publish(perms: &[serde_json::Value], funs: &[String], minions: &[String]) -> bool {
    use serde_json::Value;
    funs.iter().all(|fun| {
        perms
            .iter()
            .any(|p| matches!(p, Value::String(r) if !r.starts_with('@') && re_match(r, fun)))
            || minions.iter().all(|id| {
                perms.iter().any(|p| match p {
                    Value::Object(m) if m.len() == 1 => m.iter().any(|(tgt, conds)| {
                        !tgt.starts_with('@') && fnmatch(id, tgt) && fun_check(conds, fun)
                    }),
                    _ => false,
                })
            })
    })
}

/// Salt's `spec_check` for a runner or wheel function (`form`): `@runner`/`@wheel` (or
/// `@runners`), `@<module>`, or `{'@runner': [regexes]}`/`{'@<module>': [function regexes]}`.
fn eauth_spec(perms: &[serde_json::Value], fun: &str, form: &str) -> bool {
    use serde_json::Value;
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
            (rest == module && fun_check(conds, name))
                || ((rest == form || *k == plural) && fun_check(conds, fun))
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
            .is_some_and(|globs| globs.iter().any(|g| fnmatch(fun, g))),
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

    /// May `user` run every one of `funs` on every one of `minions`?
    pub fn check_publish(
        &self,
        user: &str,
        funs: &[String],
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
        for fun in funs {
            for id in minions {
                let allowed = entries.iter().any(|e| match e {
                    AclEntry::Fun(g) => fnmatch(fun, g),
                    AclEntry::Target(m) => m
                        .iter()
                        .any(|(tgt, fs)| fnmatch(id, tgt) && fs.iter().any(|g| fnmatch(fun, g))),
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
    /// May `who` run every one of `funs` on every one of `minions`?
    pub fn publish(&self, who: &Caller, funs: &[String], minions: &[String]) -> Result<(), Status> {
        match who {
            Caller::Cert(name) => self.check_publish(name, funs, minions),
            Caller::Eauth { perms, .. } => {
                if eauth_publish(perms, funs, minions) {
                    Ok(())
                } else {
                    Err(Status::permission_denied(EAUTH_AUTHORIZATION_ERROR))
                }
            }
        }
    }

    /// May `who` run runner `fun`?
    pub fn runner(&self, who: &Caller, fun: &str) -> Result<(), Status> {
        match who {
            Caller::Cert(name) => self.check_runner(name, fun),
            Caller::Eauth {
                user,
                auth_type,
                perms,
            } => {
                if eauth_spec(perms, fun, "runner") {
                    Ok(())
                } else {
                    Err(eauth_refused(user, auth_type))
                }
            }
        }
    }

    /// May `who` call wheel function `fun`?
    pub fn wheel(&self, who: &Caller, fun: &str) -> Result<(), Status> {
        match who {
            Caller::Cert(name) => self.check_wheel(name, fun),
            Caller::Eauth {
                user,
                auth_type,
                perms,
            } => {
                if eauth_spec(perms, fun, "wheel") {
                    Ok(())
                } else {
                    Err(eauth_refused(user, auth_type))
                }
            }
        }
    }

    /// May `who` read the job cache with `fun` (a `jobs.*` runner)?
    pub fn jobs(&self, who: &Caller, fun: &str) -> Result<(), Status> {
        match who {
            Caller::Cert(name) => self.check_jobs(name, fun),
            Caller::Eauth { .. } => self.runner(who, fun),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            acl.check_publish("alice", &s(&["test.ping"]), &s(&["db1", "web1"]))
                .is_ok()
        );
        assert!(
            acl.check_publish("alice", &s(&["cmd.run"]), &s(&["web1"]))
                .is_ok()
        );
        let e = acl
            .check_publish("alice", &s(&["cmd.run"]), &s(&["web1", "db1"]))
            .unwrap_err();
        assert_eq!(
            e.message(),
            "publisher_acl: client alice may not run cmd.run on db1"
        );
        assert!(
            acl.check_publish("ops-bob", &s(&["pkg.install"]), &s(&["db1"]))
                .is_ok()
        );
        assert!(
            acl.check_publish("mallory", &s(&["test.ping"]), &s(&["db1"]))
                .is_err()
        );
        assert!(
            acl.check_publish(ADMIN, &s(&["cmd.run"]), &s(&["db1"]))
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
            acl.check_publish("bob", &s(&["test.ping"]), &s(&["m1"]))
                .is_ok()
        );
        assert!(
            acl.check_publish("ops", &s(&["test.ping"]), &s(&["m1"]))
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
            acl.publish(&bob, &s(&["test.ping"]), &s(&["db1", "web1"]))
                .is_ok()
        );
        // A regex matches at the start: test.ping_x is allowed as in Salt.
        assert!(acl.publish(&bob, &s(&["test.pingx"]), &s(&["db1"])).is_ok());
        assert!(
            acl.publish(&bob, &s(&["cmd.run"]), &s(&["web1", "web2"]))
                .is_ok()
        );
        let e = acl
            .publish(&bob, &s(&["cmd.run"]), &s(&["web1", "db1"]))
            .unwrap_err();
        assert_eq!(e.message(), "Authorization error occurred.");
        // An argument-restricted entry does not grant the call without checking arguments.
        assert!(
            acl.publish(&bob, &s(&["pkg.install"]), &s(&["web1"]))
                .is_err()
        );
        assert!(acl.runner(&bob, "manage.status").is_ok());
        let e = acl.runner(&bob, "jobs.list_jobs").unwrap_err();
        assert_eq!(
            e.message(),
            "Authentication failure of type \"token\" occurred for user bob."
        );
        assert!(acl.jobs(&bob, "jobs.list_jobs").is_err());
        assert!(acl.wheel(&bob, "key.list_all").is_ok());
        assert!(acl.wheel(&bob, "key.accept").is_err());
        // An eauth user called admin is not the admin certificate.
        let admin = who(ADMIN);
        assert!(acl.publish(&admin, &s(&["cmd.run"]), &s(&["db1"])).is_err());
        let all = Caller::Eauth {
            user: "alice".into(),
            auth_type: "eauth".into(),
            perms: serde_yaml_ng::from_str("['.*', '@runner', '@wheel', '@jobs']").unwrap(),
        };
        assert!(acl.publish(&all, &s(&["cmd.run"]), &s(&["db1"])).is_ok());
        assert!(acl.runner(&all, "jobs.lookup_jid").is_ok());
        assert!(acl.wheel(&all, "key.delete").is_ok());
        // A certificate keeps the certificate rules.
        assert!(
            acl.publish(
                &Caller::Cert("anyone".into()),
                &s(&["cmd.run"]),
                &s(&["db1"])
            )
            .is_ok()
        );
    }
}
