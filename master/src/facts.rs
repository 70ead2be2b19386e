//! What the master knows of each minion for targeting: its grains and pillar, kept in memory
//! and in `cachedir/minions/<id>/data.json`, so targeting works before a minion reconnects.
//!
//! Matching a target never holds the lock while it parses grains or runs a matcher: it takes a
//! snapshot of shared pointers and matches outside, so a publish to 10,000 minions does not
//! block subscriptions and returns behind it.
//!
//! A change made here (a subscription, a refresh, a clear) is handed to [`FactShare`], the seam
//! a cluster fills to tell the other replicas and its database; only after the unchanged
//! check, so a fleet that reconnects with the facts it had shares nothing. Facts another
//! replica shared come in through [`FactStore::mirror`] and are not shared again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use saltq_semantics::target::{MinionFacts, Target};
use serde_json::{Map, Value};

use crate::minion_data::MinionDataWriter;

/// A minion's grains kept as compact JSON text. Parsed, a host's grains take about 23 KiB of
/// small allocations (a map per object, a string per value); as text about a quarter of that,
/// which with 10,000 minions is the difference of some 150 MB. Only grain and ipcidr targets
/// and the grains runners read them, and those parse what they look at.
#[derive(Clone, PartialEq)]
struct GrainsText(Arc<str>);

impl GrainsText {
    fn new(grains: &Value) -> GrainsText {
        GrainsText(grains.to_string().into())
    }

    fn parse(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or_else(|_| Value::Object(Map::new()))
    }
}

/// The cached facts of one minion; both parts are shared pointers, so a snapshot is cheap.
#[derive(Clone, Default, PartialEq)]
struct Facts {
    grains: Option<GrainsText>,
    pillar: Option<Arc<Value>>,
}

impl Facts {
    /// The text of `data.json`: `{"grains": ..., "pillar": ...}`.
    fn to_json(&self) -> String {
        let grains = self.grains.as_ref().map_or("null", |g| &g.0);
        let pillar = self
            .pillar
            .as_ref()
            .map_or_else(|| "null".to_owned(), |p| p.to_string());
        format!("{{\"grains\":{grains},\"pillar\":{pillar}}}")
    }
}

/// `data.json` as read back: the grains stay text.
#[derive(serde::Deserialize)]
struct DataFile {
    grains: Option<Box<serde_json::value::RawValue>>,
    pillar: Option<Value>,
}

/// Where a minion's changed facts go besides this master's memory and disk: in a cluster, the
/// other replicas and the database. Called outside the store's lock, with what the minion's
/// facts are now (`None`: not known, or cleared).
pub trait FactShare: Send + Sync {
    /// `id`'s facts changed: grains as JSON text, and the pillar.
    fn changed(&self, id: &str, grains: Option<&str>, pillar: Option<&Value>);
}

/// Grains and pillar per minion id, persisted on a writer thread.
pub struct FactStore {
    facts: Mutex<HashMap<String, Facts>>,
    writer: MinionDataWriter,
    /// Where changes made here are shared, once plugged in.
    share: OnceLock<Arc<dyn FactShare>>,
}

impl FactStore {
    /// Loads what `dir` (`cachedir/minions`) holds and starts its writer.
    pub fn open(dir: PathBuf) -> FactStore {
        let mut facts = HashMap::new();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let id = e.file_name().to_string_lossy().into_owned();
                if let Ok(text) = std::fs::read_to_string(e.path().join("data.json"))
                    && let Ok(v) = serde_json::from_str::<DataFile>(&text)
                {
                    let grains = v
                        .grains
                        .filter(|g| g.get() != "null")
                        .map(|g| GrainsText(Arc::from(g.get())));
                    let pillar = v.pillar.filter(|p| !p.is_null()).map(Arc::new);
                    facts.insert(id, Facts { grains, pillar });
                }
            }
        }
        FactStore {
            facts: Mutex::new(facts),
            writer: MinionDataWriter::start(dir),
            share: OnceLock::new(),
        }
    }

    /// From now on, hands every change made here to `share` (once; a second call is ignored).
    pub fn share_with(&self, share: Arc<dyn FactShare>) {
        let _ = self.share.set(share);
    }

    /// Changes one minion's facts and hands the result to the writer, unless nothing changed:
    /// a restarted master's whole fleet subscribes again with the grains and pillar it already
    /// has on disk, and rewriting 10,000 identical files would only cost the reconnect time.
    /// A change is shared too unless it came from the cluster (`shared`).
    fn update(&self, id: &str, shared: bool, change: impl FnOnce(&mut Facts)) {
        let (data, now) = {
            let mut m = self.facts.lock().unwrap_or_else(|e| e.into_inner());
            let f = m.entry(id.to_owned()).or_default();
            let before = f.clone();
            change(f);
            if *f == before {
                return;
            }
            (f.to_json(), f.clone())
        };
        self.writer.write(id, data);
        if !shared && let Some(share) = self.share.get() {
            share.changed(
                id,
                now.grains.as_ref().map(|g| &*g.0),
                now.pillar.as_deref(),
            );
        }
    }

    /// Replaces both grains and pillar with what another replica of the cluster shared
    /// (`None`: not known there); not shared again.
    pub fn mirror(&self, id: &str, grains: Option<&Value>, pillar: Option<Value>) {
        let grains = grains.map(GrainsText::new);
        self.update(id, true, |f| {
            f.grains = grains;
            f.pillar = pillar.map(Arc::new);
        });
    }

    /// Replaces both grains and pillar (a subscription).
    pub fn set(&self, id: &str, grains: &Value, pillar: Value) {
        let grains = GrainsText::new(grains);
        self.update(id, false, |f| {
            f.grains = Some(grains);
            f.pillar = Some(Arc::new(pillar));
        });
    }

    /// Replaces the grains.
    pub fn set_grains(&self, id: &str, grains: &Value) {
        let grains = GrainsText::new(grains);
        self.update(id, false, |f| f.grains = Some(grains));
    }

    /// Replaces the pillar.
    pub fn set_pillar(&self, id: &str, pillar: Value) {
        self.update(id, false, |f| f.pillar = Some(Arc::new(pillar)));
    }

    /// Forgets the grains and/or pillar of a known minion (cache.clear_*).
    pub fn clear(&self, id: &str, grains: bool, pillar: bool) {
        if !self
            .facts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(id)
        {
            return;
        }
        self.update(id, false, |f| {
            if grains {
                f.grains = None;
            }
            if pillar {
                f.pillar = None;
            }
        });
    }

    fn get(&self, id: &str) -> Facts {
        let m = self.facts.lock().unwrap_or_else(|e| e.into_inner());
        m.get(id).cloned().unwrap_or_default()
    }

    /// The cached grains and pillar of a minion.
    pub fn cached(&self, id: &str) -> (Option<Value>, Option<Value>) {
        let f = self.get(id);
        (
            f.grains.as_ref().map(GrainsText::parse),
            f.pillar.map(Arc::unwrap_or_clone),
        )
    }

    /// The cached grains of a minion.
    pub fn grains(&self, id: &str) -> Option<Value> {
        self.get(id).grains.as_ref().map(GrainsText::parse)
    }

    /// Which of `ids` the master expects `target` to match (Salt's greedy check: a minion
    /// whose facts are unknown is expected when it could match).
    pub fn matching(&self, target: &Target, ids: Vec<String>) -> Vec<String> {
        let reads_grains = target.reads_grains();
        let snapshot: Vec<(String, Facts)> = {
            let m = self.facts.lock().unwrap_or_else(|e| e.into_inner());
            ids.into_iter()
                .map(|id| {
                    let f = m.get(&id).cloned().unwrap_or_default();
                    (id, f)
                })
                .collect()
        };
        snapshot
            .into_iter()
            .filter(|(id, f)| {
                let grains = f
                    .grains
                    .as_ref()
                    .filter(|_| reads_grains)
                    .map(GrainsText::parse);
                target.matches_greedy(&MinionFacts {
                    id,
                    grains: grains.as_ref(),
                    pillar: f.pillar.as_deref(),
                })
            })
            .map(|(id, _)| id)
            .collect()
    }

    /// Waits until the facts handed over so far are on disk.
    pub fn flush(&self) {
        self.writer.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use saltq_semantics::target::{Nodegroups, TargetType};
    use serde_json::json;

    fn target(expr: &str, t: TargetType) -> Target {
        Target::compile(expr, t, None, &Nodegroups::new()).unwrap()
    }

    #[test]
    fn matches_on_cached_grains_and_survives_a_restart() {
        let dir = std::env::temp_dir().join(format!("saltq-facts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let store = FactStore::open(dir.clone());
            store.set("web1", &json!({"os": "Debian"}), json!({"role": "web"}));
            store.set("db1", &json!({"os": "Fedora"}), json!({}));
            store.flush();
        }
        let store = FactStore::open(dir.clone());
        let ids = vec!["web1".to_owned(), "db1".to_owned(), "new1".to_owned()];
        let debian = target("os:Debian", TargetType::Grain);
        // new1 has no cached grains: the master cannot rule it out.
        assert_eq!(store.matching(&debian, ids.clone()), vec!["web1", "new1"]);
        let role = target("role:web", TargetType::Pillar);
        assert!(store.matching(&role, ids).contains(&"web1".to_owned()));
        store.clear("web1", true, false);
        assert_eq!(store.cached("web1"), (None, Some(json!({"role": "web"}))));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_same_facts_again_after_a_restart_are_not_written_again() {
        let dir = std::env::temp_dir().join(format!("saltq-facts-same-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = dir.join("web1/data.json");
        let grains = json!({"os": "Debian", "num_cpus": 2});
        {
            let store = FactStore::open(dir.clone());
            store.set("web1", &grains, json!({"role": "web"}));
            store.flush();
        }
        assert!(file.is_file());
        // A restarted master: the minion subscribes again with what is on disk.
        let store = FactStore::open(dir.clone());
        std::fs::remove_file(&file).unwrap();
        store.set("web1", &grains, json!({"role": "web"}));
        store.flush();
        assert!(!file.exists(), "unchanged facts were written again");
        store.set("web1", &grains, json!({"role": "db"}));
        store.flush();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("\"db\""), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// One change shared: id, grains text, pillar.
    type Shared = (String, Option<String>, Option<Value>);

    /// Counts what is shared, per minion.
    #[derive(Default)]
    struct Counted(Mutex<Vec<Shared>>);

    impl FactShare for Counted {
        fn changed(&self, id: &str, grains: Option<&str>, pillar: Option<&Value>) {
            self.0.lock().unwrap().push((
                id.to_owned(),
                grains.map(str::to_owned),
                pillar.cloned(),
            ));
        }
    }

    #[test]
    fn an_unchanged_reconnect_shares_nothing_and_mirrored_facts_are_not_shared_again() {
        let dir = std::env::temp_dir().join(format!("saltq-facts-share-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let grains = json!({"os": "Debian"});
        {
            let store = FactStore::open(dir.clone());
            store.set("web1", &grains, json!({"role": "web"}));
            store.flush();
        }
        // A restarted replica: the minion reconnects with the facts it had.
        let store = FactStore::open(dir.clone());
        let counted = Arc::new(Counted::default());
        store.share_with(counted.clone());
        store.set("web1", &grains, json!({"role": "web"}));
        assert_eq!(
            counted.0.lock().unwrap().len(),
            0,
            "unchanged facts were shared"
        );
        // A change is shared, once, with the minion's facts as they are now.
        store.set_pillar("web1", json!({"role": "db"}));
        store.set_pillar("web1", json!({"role": "db"}));
        assert_eq!(
            *counted.0.lock().unwrap(),
            vec![(
                "web1".to_owned(),
                Some(r#"{"os":"Debian"}"#.to_owned()),
                Some(json!({"role": "db"}))
            )]
        );
        // What another replica shared is kept here but not shared back.
        store.mirror("db1", Some(&json!({"os": "Fedora"})), None);
        assert_eq!(counted.0.lock().unwrap().len(), 1);
        assert_eq!(store.cached("db1"), (Some(json!({"os": "Fedora"})), None));
        store.flush();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
