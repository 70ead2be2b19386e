//! Who may do what, keyed by the client certificate's name (Salt's `publisher_acl`, plus a
//! `runner_acl` of runner globs). Without an ACL every client may do everything; the master's own
//! `admin` certificate is never restricted (as root in Salt).

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

/// Both ACLs.
#[derive(Debug, Clone, Default)]
pub struct Acl {
    /// Jobs.
    pub publisher: Option<PublisherAcl>,
    /// Runners.
    pub runner: Option<RunnerAcl>,
}

/// The name of the master's own client certificate, never restricted.
pub const ADMIN: &str = "admin";

fn entries_for<'a, T>(acl: &'a BTreeMap<String, Vec<T>>, user: &str) -> Vec<&'a T> {
    acl.iter()
        .filter(|(who, _)| fnmatch(user, who))
        .flat_map(|(_, e)| e.iter())
        .collect()
}

impl Acl {
    /// May `user` run every one of `funs` on every one of `minions`?
    pub fn check_publish(
        &self,
        user: &str,
        funs: &[String],
        minions: &[String],
    ) -> Result<(), Status> {
        let Some(acl) = &self.publisher else {
            return Ok(());
        };
        if user == ADMIN {
            return Ok(());
        }
        let entries = entries_for(acl, user);
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

    /// May `user` run runner `fun`?
    pub fn check_runner(&self, user: &str, fun: &str) -> Result<(), Status> {
        let Some(acl) = &self.runner else {
            return Ok(());
        };
        if user == ADMIN {
            return Ok(());
        }
        if entries_for(acl, user).iter().any(|g| fnmatch(fun, g)) {
            Ok(())
        } else {
            Err(Status::permission_denied(format!(
                "runner_acl: client {user} may not run runner {fun}"
            )))
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
}
