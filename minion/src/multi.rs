//! Salt's hot multi-master (its `MultiMinion`): `master: [a, b, ...]` with `master_type: str`
//! links the minion to every master at once, each through a minion instance of its own.
//!
//! What is decided here is pure: which instances there are and what each links to and trusts.
//! An instance is a whole `daemon::Driver` with its own `Link` state machine, its own trust
//! (each master's CA pinned in a file of its own, `master_finger` per master), its own key
//! acceptance, its own pillar and its own outbox: a job runs with the pillar of the master that
//! published it and its return goes back to that master only, re-sent until that master
//! acknowledges it (also after that master restarts). The instances share the process's key,
//! grains and reaper, and one job table in which a job is keyed by (master, jid) (`jobs.rs`):
//! two independent masters make their jids alone, so the same jid from both is two jobs.
//!
//! With one master, or `master_type: failover`, there is one instance holding the whole list,
//! as before: its `Link` goes through the list one master at a time.

use crate::config::{MasterAddr, MasterType};

/// One minion instance: what it links to and how it trusts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Its position in `master:` (0 with failover): the master part of its jobs' keys.
    pub index: usize,
    /// The masters its `Link` goes through: one, or the failover list.
    pub masters: Vec<MasterAddr>,
    /// The CA fingerprint its master must present, if any.
    pub master_finger: Option<String>,
    /// The file under `pki_dir` its master's CA is pinned in.
    pub pinned_ca_name: String,
}

/// The instances for a config's `masters`, `master_type` and `master_finger` (one for every
/// master, or `finger_each` with one per master).
pub fn plan(
    masters: &[MasterAddr],
    kind: MasterType,
    finger: Option<&str>,
    finger_each: &[String],
) -> Vec<Instance> {
    if kind == MasterType::Failover || masters.len() <= 1 {
        return vec![Instance {
            index: 0,
            masters: masters.to_vec(),
            master_finger: finger.map(str::to_owned),
            pinned_ca_name: crate::identity::PINNED_CA_FILE.to_owned(),
        }];
    }
    masters
        .iter()
        .enumerate()
        .map(|(index, m)| Instance {
            index,
            masters: vec![m.clone()],
            master_finger: finger_each
                .get(index)
                .cloned()
                .or_else(|| finger.map(str::to_owned)),
            pinned_ca_name: pinned_ca_name(index, m),
        })
        .collect()
}

/// Where the CA of the master at `index` in `master:` is pinned: the first master's in
/// `master_ca.crt` (where a one-master minion keeps it, so adding a second master keeps the
/// first one's pin), each other's in a file named after its address.
pub fn pinned_ca_name(index: usize, m: &MasterAddr) -> String {
    if index == 0 {
        return crate::identity::PINNED_CA_FILE.to_owned();
    }
    let host: String = m
        .host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("master_ca.{host}_{}.crt", m.port)
}

/// A name for the instance in logs: its master, or `failover` with the list.
pub fn label(inst: &Instance) -> String {
    match inst.masters.as_slice() {
        [one] => one.to_string(),
        list => format!(
            "failover {}",
            list.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(host: &str, port: u16) -> MasterAddr {
        MasterAddr {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn one_master_or_failover_is_one_instance_with_the_usual_pin() {
        let one = plan(&[addr("m1", 4506)], MasterType::Str, Some("aa"), &[]);
        assert_eq!(
            one,
            vec![Instance {
                index: 0,
                masters: vec![addr("m1", 4506)],
                master_finger: Some("aa".into()),
                pinned_ca_name: "master_ca.crt".into(),
            }]
        );
        let list = [addr("m1", 4506), addr("m2", 4506), addr("m3", 4507)];
        let fo = plan(&list, MasterType::Failover, None, &[]);
        assert_eq!(fo.len(), 1);
        assert_eq!(fo[0].masters, list.to_vec());
        assert_eq!(fo[0].pinned_ca_name, "master_ca.crt");
        assert_eq!(label(&fo[0]), "failover m1:4506,m2:4506,m3:4507");
    }

    #[test]
    fn several_masters_are_one_instance_each_with_their_own_trust() {
        let list = [addr("m1", 4506), addr("10.0.0.2", 4600), addr("::1", 4506)];
        let each = ["aa".to_owned(), "bb".to_owned(), "cc".to_owned()];
        let p = plan(&list, MasterType::Str, None, &each);
        let got: Vec<(usize, Vec<MasterAddr>, Option<&str>, &str)> = p
            .iter()
            .map(|i| {
                (
                    i.index,
                    i.masters.clone(),
                    i.master_finger.as_deref(),
                    i.pinned_ca_name.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0, vec![addr("m1", 4506)], Some("aa"), "master_ca.crt"),
                (
                    1,
                    vec![addr("10.0.0.2", 4600)],
                    Some("bb"),
                    "master_ca.10.0.0.2_4600.crt"
                ),
                (
                    2,
                    vec![addr("::1", 4506)],
                    Some("cc"),
                    "master_ca.__1_4506.crt"
                ),
            ]
        );
        assert_eq!(label(&p[2]), "[::1]:4506");
        // Salt's single finger applies to every master; none leaves each to first use.
        let p = plan(&list[..2], MasterType::Str, Some("zz"), &[]);
        assert!(p.iter().all(|i| i.master_finger.as_deref() == Some("zz")));
        let p = plan(&list[..2], MasterType::Str, None, &[]);
        assert!(p.iter().all(|i| i.master_finger.is_none()));
    }

    #[test]
    fn each_master_pins_in_a_file_of_its_own() {
        let names: Vec<String> = [
            addr("a", 1),
            addr("a", 2),
            addr("b", 1),
            addr("a.b", 1),
            addr("a_b", 1),
        ]
        .iter()
        .enumerate()
        .map(|(i, m)| pinned_ca_name(i + 1, m))
        .collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert!(names.iter().all(|n| !n.contains('/')), "{names:?}");
    }
}
