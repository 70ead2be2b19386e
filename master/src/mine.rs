//! The Salt Mine on the master (Salt's `_mine`, `_mine_get`, `_mine_delete`, `_mine_flush`
//! in `salt/daemons/masterapi.py`): each minion's mine is stored in the job cache's database
//! (`saltq_jobcache`'s mine table), so the replicas of a cluster share it; it goes with the
//! minion's key.
//!
//! What `mine.get` answers is decided by pure functions: which minions a target names
//! ([`Target::matches`] over the cached grains and pillar, not greedy, pillar matches exact),
//! and [`gather`], which applies each entry's minion-side `allow_tgt` ACL for the asking
//! minion. The async functions around them only read and write the store.

use std::collections::BTreeMap;
use std::sync::Arc;

use saltq_exec::mine::{ACL_ID, entry_data, put_answer, requested_functions};
use saltq_exec::{MasterFuture, MineClient};
use saltq_jobcache::MineData;
use saltq_semantics::target::{MinionFacts, Target, TargetType};
use serde_json::{Map, Value};

use crate::state::Master;

/// The target type `mine.get` matches with: Salt makes pillar matches exact
/// (`pillar` becomes `pillar_exact`).
pub fn mine_target_type(tgt_type: &str) -> Result<TargetType, String> {
    let t: TargetType = tgt_type
        .parse()
        .map_err(|e: saltq_semantics::target::TargetError| format!("mine.get: {e}"))?;
    Ok(match t {
        TargetType::Pillar => TargetType::PillarExact,
        other => other,
    })
}

/// The `mine.get` answer for minion `requester`: for each matched minion (in order) and each
/// requested function it has, the entry's data, unless the entry carries an `allow_tgt` ACL
/// that `allowed(allow_tgt, allow_tgt_type)` (the minions that target names) does not give
/// `requester`, or that names no minion at all. `fun` is a string (comma-separated) or a list;
/// any other value answers `{}`.
pub fn gather(
    requester: &str,
    fun: &Value,
    matched: &[String],
    mine: &MineData,
    mut allowed: impl FnMut(&str, &str) -> Vec<String>,
) -> Map<String, Value> {
    let mut out = Map::new();
    let Some((functions, by_function)) = requested_functions(fun) else {
        return out;
    };
    // Salt resolves each minion's ACL once per minion and function.
    let mut acl_cache: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for minion in matched {
        let Some(data) = mine.get(minion) else {
            continue;
        };
        for function in &functions {
            let Some(entry) = data.get(function) else {
                continue;
            };
            if let Some(wrapped) = entry.as_object().filter(|m| m.contains_key(ACL_ID))
                && let Some(tgt) = wrapped.get("allow_tgt")
            {
                let key = (minion.clone(), function.clone());
                if !acl_cache.contains_key(&key) {
                    let tgt_type = wrapped
                        .get("allow_tgt_type")
                        .and_then(Value::as_str)
                        .unwrap_or("glob");
                    let who = allowed(&saltq_semantics::python::str(tgt), tgt_type);
                    if who.is_empty() {
                        continue;
                    }
                    acl_cache.insert(key.clone(), who);
                }
                if !acl_cache[&key].iter().any(|m| m == requester) {
                    tracing::debug!(%requester, %function, %minion, "mine request denied by allow_tgt");
                    continue;
                }
            }
            put_answer(
                &mut out,
                by_function,
                function,
                minion,
                entry_data(entry).clone(),
            );
        }
    }
    out
}

/// Salt's master-side `mine_get` ACL: `{minion id regex: [function regex, ...]}`. A minion
/// (or the master, under its id) may read the functions that some regex of the lists whose
/// key `re.match`es its id `re.match`es; nothing else.
#[derive(Debug, Clone, PartialEq)]
pub struct MineGetAcl(BTreeMap<String, Vec<String>>);

impl MineGetAcl {
    /// Checks every regex compiles (Salt would fail each `mine.get` on a bad one instead);
    /// the error names the regex.
    pub fn new(rules: BTreeMap<String, Vec<String>>) -> Result<MineGetAcl, String> {
        for (id_re, funs) in &rules {
            for re in std::iter::once(id_re).chain(funs) {
                saltq_semantics::python::re_match(re, "")
                    .map_err(|e| format!("{re:?} is not a regular expression: {e}"))?;
            }
        }
        Ok(MineGetAcl(rules))
    }

    /// The requested functions `requester` may read, in the order asked.
    pub fn allowed(&self, requester: &str, functions: &[String]) -> Vec<String> {
        let re = |p: &str, s: &str| saltq_semantics::python::re_match(p, s).unwrap_or(false);
        let perms: Vec<&String> = self
            .0
            .iter()
            .filter(|(id_re, _)| re(id_re, requester))
            .flat_map(|(_, funs)| funs)
            .collect();
        functions
            .iter()
            .filter(|f| perms.iter().any(|p| re(p, f)))
            .cloned()
            .collect()
    }

    /// `fun` narrowed to what `requester` may read, shaped so the answer is keyed as the
    /// request asked (several functions asked keep the by-function form even when one is
    /// left); `None` when nothing is left (Salt answers `{}`).
    pub fn narrow(&self, requester: &str, fun: &Value) -> Option<Value> {
        let (functions, by_function) = requested_functions(fun)?;
        let allowed = self.allowed(requester, &functions);
        match (allowed.as_slice(), by_function) {
            ([], _) => None,
            ([one], false) => Some(Value::String(one.clone())),
            (_, _) => Some(Value::Array(
                allowed.into_iter().map(Value::String).collect(),
            )),
        }
    }
}

/// The accepted minions `target` matches on the master's cached facts; `greedy` includes
/// those with no cached facts (Salt's `check_minions` default, used for `allow_tgt`).
pub fn matching(master: &Master, target: &Target, greedy: bool) -> Vec<String> {
    let mut ids = master.keys.accepted();
    ids.sort();
    ids.into_iter()
        .filter(|id| {
            let (g, p) = master.facts.cached(id);
            let facts = MinionFacts {
                id,
                grains: g.as_ref(),
                pillar: p.as_ref(),
            };
            if greedy {
                target.matches_greedy(&facts)
            } else {
                target.matches(&facts)
            }
        })
        .collect()
}

/// Compiles a target for the mine with the master's nodegroups; the error names the target.
fn compile(master: &Master, tgt: &str, tgt_type: TargetType) -> Result<Target, String> {
    Target::compile(tgt, tgt_type, None, &master.cfg.nodegroups)
        .map_err(|e| format!("mine target {tgt:?}: {e}"))
}

/// Salt's `_mine_get` for minion (or master) `requester`.
pub async fn get(
    master: &Master,
    requester: &str,
    tgt: &str,
    tgt_type: &str,
    fun: &Value,
) -> Result<Value, String> {
    let narrowed;
    let fun = match &master.cfg.mine_get {
        None => fun,
        Some(acl) => match acl.narrow(requester, fun) {
            Some(f) => {
                narrowed = f;
                &narrowed
            }
            None => {
                tracing::debug!(%requester, %fun, "mine.get refused by the master's mine_get");
                return Ok(Value::Object(Map::new()));
            }
        },
    };
    let target = compile(master, tgt, mine_target_type(tgt_type)?)?;
    let matched = matching(master, &target, false);
    if matched.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let mine = master
        .cache
        .mine_fetch(Some(matched.clone()))
        .await
        .map_err(|e| e.to_string())?;
    let answer = gather(requester, fun, &matched, &mine, |allow_tgt, allow_type| {
        let Ok(t) = allow_type.parse::<TargetType>() else {
            tracing::warn!(%allow_tgt, %allow_type, "mine allow_tgt_type is not a target type");
            return Vec::new();
        };
        match compile(master, allow_tgt, t) {
            Ok(target) => matching(master, &target, true),
            Err(e) => {
                tracing::warn!(error = %e, "mine allow_tgt does not compile");
                Vec::new()
            }
        }
    });
    Ok(Value::Object(answer))
}

/// The raw mine of the minions `tgt` matches, `{}` for a matched minion without one (the
/// `cache.mine` runner, Salt's `get_cached_mine_data`).
pub async fn cached(master: &Master, tgt: &str, tgt_type: &str) -> Result<Value, String> {
    let t: TargetType = tgt_type
        .parse()
        .map_err(|e: saltq_semantics::target::TargetError| e.to_string())?;
    let matched = matching(master, &compile(master, tgt, t)?, true);
    if matched.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let mut mine = master
        .cache
        .mine_fetch(Some(matched.clone()))
        .await
        .map_err(|e| e.to_string())?;
    Ok(Value::Object(
        matched
            .into_iter()
            .map(|id| {
                let data = mine.remove(&id).unwrap_or_default();
                (id, Value::Object(data))
            })
            .collect(),
    ))
}

/// Flushes the mine of every minion whose accepted key goes (deleted or moved away), as
/// Salt drops the minion's data cache with its key. In a cluster the replica that made the
/// change flushes the shared table (a mirrored change is another replica's).
pub async fn forget_deleted(master: Arc<Master>) {
    use tokio::sync::broadcast::error::RecvError;
    let mut changes = master.keys.changes();
    loop {
        match changes.recv().await {
            Ok(c) if c.state == crate::keys::KeyState::Accepted && !c.added && !c.mirrored => {
                match master.cache.mine_flush(&c.id).await {
                    Ok(true) => tracing::info!(minion = %c.id, "key deleted, mine flushed"),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(minion = %c.id, error = %e, "cannot flush the mine of a deleted key")
                    }
                }
            }
            Ok(_) => {}
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(
                    "{n} key changes missed; flushing the mine of minions without a key"
                );
                let accepted = master.keys.accepted();
                if let Ok(mine) = master.cache.mine_fetch(None).await {
                    for id in mine.keys().filter(|id| !accepted.contains(id)) {
                        let _ = master.cache.mine_flush(id).await;
                    }
                }
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// The mine as the master's own state runs (orchestration) reach it, under the master's id.
pub struct MasterMine {
    /// The master.
    pub master: Arc<Master>,
    /// The id the master runs states as (`<hostname>_master`).
    pub id: String,
}

impl MineClient for MasterMine {
    fn store(&self, data: Map<String, Value>, clear: bool) -> MasterFuture<()> {
        let (master, id) = (self.master.clone(), self.id.clone());
        Box::pin(async move {
            master
                .cache
                .mine_store(&id, data, clear)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn get(&self, tgt: &str, tgt_type: &str, fun: Value) -> MasterFuture<Value> {
        let (master, id) = (self.master.clone(), self.id.clone());
        let (tgt, tgt_type) = (tgt.to_owned(), tgt_type.to_owned());
        Box::pin(async move { get(&master, &id, &tgt, &tgt_type, &fun).await })
    }

    fn delete(&self, fun: &str) -> MasterFuture<()> {
        let (master, id, fun) = (self.master.clone(), self.id.clone(), fun.to_owned());
        Box::pin(async move {
            master
                .cache
                .mine_delete(&id, &fun)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
    }

    fn flush(&self) -> MasterFuture<()> {
        let (master, id) = (self.master.clone(), self.id.clone());
        Box::pin(async move {
            master
                .cache
                .mine_flush(&id)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mine() -> MineData {
        let mut m = MineData::new();
        let obj = |v: Value| v.as_object().cloned().unwrap();
        m.insert(
            "web1".into(),
            obj(json!({
                "network.ip_addrs": ["10.0.0.1"],
                "secret": {"__data__": "s1", "__saltmine_acl__": 1, "allow_tgt": "lb*"},
                "open_wrapped": {"__data__": "o1", "__saltmine_acl__": 1},
            })),
        );
        m.insert(
            "web2".into(),
            obj(json!({
                "network.ip_addrs": ["10.0.0.2"],
                "secret": {"__data__": "s2", "__saltmine_acl__": 1,
                           "allow_tgt": "G@role:none", "allow_tgt_type": "compound"},
            })),
        );
        m
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    /// `allowed` as the master resolves it, for the tests: glob `lb*` names lb1 only.
    fn acl(tgt: &str, tgt_type: &str) -> Vec<String> {
        match (tgt, tgt_type) {
            ("lb*", "glob") => ids(&["lb1"]),
            _ => Vec::new(),
        }
    }

    #[test]
    fn one_function_keys_by_minion_several_by_function() {
        let matched = ids(&["web1", "web2", "nomine"]);
        let got = gather("lb1", &json!("network.ip_addrs"), &matched, &mine(), acl);
        assert_eq!(
            Value::Object(got),
            json!({"web1": ["10.0.0.1"], "web2": ["10.0.0.2"]})
        );
        let got = gather(
            "lb1",
            &json!("network.ip_addrs,open_wrapped"),
            &matched,
            &mine(),
            acl,
        );
        assert_eq!(
            Value::Object(got),
            json!({"network.ip_addrs": {"web1": ["10.0.0.1"], "web2": ["10.0.0.2"]},
                   "open_wrapped": {"web1": "o1"}})
        );
        let got = gather("lb1", &json!(["open_wrapped"]), &matched, &mine(), acl);
        assert_eq!(Value::Object(got), json!({"open_wrapped": {"web1": "o1"}}));
        assert!(gather("lb1", &json!(7), &matched, &mine(), acl).is_empty());
    }

    #[test]
    fn allow_tgt_gives_only_the_minions_it_names() {
        let matched = ids(&["web1", "web2"]);
        // lb1 is named by web1's ACL; web2's ACL names nobody, so nobody gets it.
        let got = gather("lb1", &json!("secret"), &matched, &mine(), acl);
        assert_eq!(Value::Object(got), json!({"web1": "s1"}));
        let got = gather("web2", &json!("secret"), &matched, &mine(), acl);
        assert_eq!(Value::Object(got), json!({}));
        // Only the matched minions are looked at.
        let got = gather("lb1", &json!("secret"), &ids(&["web2"]), &mine(), acl);
        assert_eq!(Value::Object(got), json!({}));
    }

    #[test]
    fn acl_is_resolved_once_per_minion_and_function() {
        let mut calls = 0;
        let matched = ids(&["web1", "web2"]);
        let _ = gather("lb1", &json!("secret,secret"), &matched, &mine(), |t, k| {
            calls += 1;
            acl(t, k)
        });
        // web1's is cached; web2's names nobody so it is asked again, as Salt does.
        assert_eq!(calls, 2);
    }

    fn mine_get_acl() -> MineGetAcl {
        let rules: BTreeMap<String, Vec<String>> = serde_json::from_value(json!({
            "web.*": ["network\\.", "ip_alias"],
            "lb1": ["secret$"],
        }))
        .unwrap();
        MineGetAcl::new(rules).unwrap()
    }

    #[test]
    fn master_mine_get_acl_matches_ids_and_functions_as_re_match() {
        let acl = mine_get_acl();
        let funs = ids(&["network.ip_addrs", "ip_alias", "secret", "x.network.y"]);
        // re.match is anchored at the start only: `web.*` names web1 and webby, not aweb.
        assert_eq!(
            acl.allowed("web1", &funs),
            ids(&["network.ip_addrs", "ip_alias"])
        );
        assert!(acl.allowed("aweb", &funs).is_empty());
        // lb1 matches `lb1` (and nothing else); `secret$` keeps only the exact name.
        assert_eq!(acl.allowed("lb1", &funs), ids(&["secret"]));
        assert_eq!(
            acl.allowed("lb10", &ids(&["secrets"])),
            Vec::<String>::new()
        );
    }

    #[test]
    fn master_mine_get_acl_keeps_the_answer_shape_asked_for() {
        let rules = mine_get_acl();
        assert_eq!(
            rules.narrow("web1", &json!("ip_alias")),
            Some(json!("ip_alias"))
        );
        // Two asked, one allowed: still keyed by function, as Salt keeps `_ret_dict`.
        assert_eq!(
            rules.narrow("web1", &json!("ip_alias,secret")),
            Some(json!(["ip_alias"]))
        );
        assert_eq!(
            rules.narrow("web1", &json!(["ip_alias"])),
            Some(json!(["ip_alias"]))
        );
        assert_eq!(rules.narrow("web1", &json!("secret")), None);
        assert_eq!(rules.narrow("db1", &json!("ip_alias")), None);
        assert_eq!(rules.narrow("web1", &json!(3)), None);
        // The narrowed request is answered as any: web1 reads network.ip_addrs only.
        let fun = rules
            .narrow("web1", &json!("network.ip_addrs,secret"))
            .unwrap();
        let got = gather("web1", &fun, &ids(&["web1", "web2"]), &mine(), acl);
        assert_eq!(
            Value::Object(got),
            json!({"network.ip_addrs": {"web1": ["10.0.0.1"], "web2": ["10.0.0.2"]}})
        );
    }

    #[test]
    fn master_mine_get_acl_refuses_a_bad_regex_by_name() {
        let rules: BTreeMap<String, Vec<String>> =
            serde_json::from_value(json!({"web(": ["network.*"]})).unwrap();
        let err = MineGetAcl::new(rules).unwrap_err();
        assert!(err.contains("\"web(\""), "{err}");
        let rules: BTreeMap<String, Vec<String>> =
            serde_json::from_value(json!({"web.*": ["[network"]})).unwrap();
        let err = MineGetAcl::new(rules).unwrap_err();
        assert!(err.contains("[network"), "{err}");
    }

    #[test]
    fn pillar_matches_are_exact_and_bad_types_named() {
        assert_eq!(mine_target_type("pillar").unwrap(), TargetType::PillarExact);
        assert_eq!(mine_target_type("").unwrap(), TargetType::Glob);
        assert_eq!(mine_target_type("grain").unwrap(), TargetType::Grain);
        let err = mine_target_type("bogus").unwrap_err();
        assert!(err.contains("bogus"), "{err}");
    }
}
