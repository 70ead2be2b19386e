//! Who may do what, keyed by the client certificate's name: Salt's `publisher_acl`, and
//! `client_acl` with the same entries as a user's list in Salt's `external_auth` (function
//! globs, `{minion glob: [function globs]}`, and `@runner`, `@wheel`, `@jobs`, each alone or
//! as `{'@runner': [runner globs]}`), plus a `runner_acl` of runner globs. Without any ACL every
//! client may do everything; once one is set, a client may manage keys only with `@wheel` and
//! run runners only with `@runner` (or a `runner_acl` entry; `@jobs` covers `jobs.*`). The
//! master's own `admin` certificate is never restricted (as root in Salt).

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
}
