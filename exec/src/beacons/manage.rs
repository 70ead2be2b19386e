//! The minion's side of `beacons.*` (Salt's `Beacon.add_beacon`, `modify_beacon`, ...): the
//! `beacons` option as the minion holds it at run time, changed on request, each change
//! answered with Salt's completion event (`/salt/minion/minion_beacon_add_complete`, ...),
//! and saved to `minion.d/beacons.conf`, read back at the next start.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value, json};

/// A change's completion event, as Salt fires it on the minion's bus.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `/salt/minion/minion_beacon_add_complete` and the like.
    pub tag: &'static str,
    /// `{complete, comment?, beacons}`.
    pub data: Value,
}

impl Change {
    /// Whether the minion made the change (`complete`).
    pub fn complete(&self) -> bool {
        self.data["complete"] == Value::Bool(true)
    }

    /// The event's `beacons` (the minion's `beacons` option after the change).
    pub fn beacons(&self) -> &Value {
        &self.data["beacons"]
    }

    /// The event's `comment`, `""` when it has none.
    pub fn comment(&self) -> String {
        self.data["comment"].as_str().unwrap_or_default().to_owned()
    }
}

/// The minion's `beacons` option at run time and where `beacons.save` writes it.
#[derive(Debug)]
pub struct Manager {
    beacons: Mutex<Map<String, Value>>,
    save_to: PathBuf,
}

/// Where Salt's `beacons.save` writes: `minion.d/beacons.conf` beside the config file.
pub fn saved_file(config_dir: &Path) -> PathBuf {
    config_dir.join("minion.d").join("beacons.conf")
}

impl Manager {
    /// A manager over these beacons, saving to `save_to`.
    pub fn new(beacons: Map<String, Value>, save_to: PathBuf) -> Self {
        Self {
            beacons: Mutex::new(beacons),
            save_to,
        }
    }

    /// The minion's beacons at start: the config's `beacons`, then each beacon of
    /// `minion.d/beacons.conf` (what `beacons.save` wrote) over it. The error names the file
    /// and what is wrong.
    pub fn load(opts: &Value, config_dir: &Path) -> Result<Self, String> {
        let mut beacons = match opts.get("beacons") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(other) => {
                return Err(format!(
                    "key beacons: expected a mapping of beacon names to their config, got {other}"
                ));
            }
        };
        let file = saved_file(config_dir);
        match std::fs::read_to_string(&file) {
            Ok(text) if text.trim().is_empty() => {}
            Ok(text) => {
                let doc: Value = serde_yaml_ng::from_str(&text)
                    .map_err(|e| format!("{}: not YAML: {e}", file.display()))?;
                match doc.get("beacons") {
                    Some(Value::Object(saved)) => {
                        beacons.extend(saved.iter().map(|(k, v)| (k.clone(), v.clone())));
                    }
                    None | Some(Value::Null) => {}
                    Some(other) => {
                        return Err(format!(
                            "{}: key beacons: expected a mapping, got {other}",
                            file.display()
                        ));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", file.display())),
        }
        Ok(Self::new(beacons, file))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Map<String, Value>> {
        self.beacons.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The `beacons` option as it is now.
    pub fn opts_beacons(&self) -> Map<String, Value> {
        self.lock().clone()
    }

    /// Where `beacons.save` writes.
    pub fn save_path(&self) -> &Path {
        &self.save_to
    }

    /// What the minion runs (Salt's `config.merge("beacons", opts beacons, omit_opts=True)`):
    /// the pillar's `beacons` when the pillar has the key, else the option.
    pub fn effective(&self, pillar: &Value) -> Map<String, Value> {
        match pillar.get("beacons") {
            Some(Value::Object(p)) => p.clone(),
            Some(_) => Map::new(),
            None => self.opts_beacons(),
        }
    }

    /// Salt's `_get_beacons`: the pillar's beacons, then the option's over them.
    pub fn list(&self, pillar: &Value, include_pillar: bool, include_opts: bool) -> Value {
        let mut out = Map::new();
        if include_pillar && let Some(Value::Object(p)) = pillar.get("beacons") {
            out.extend(p.clone());
        }
        if include_opts {
            out.extend(self.opts_beacons());
        }
        Value::Object(out)
    }

    fn in_pillar(pillar: &Value, name: &str) -> bool {
        pillar
            .get("beacons")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key(name))
    }

    fn answer(&self, tag: &'static str, complete: bool, comment: Option<String>) -> Change {
        let mut data = Map::new();
        data.insert("complete".into(), Value::Bool(complete));
        if let Some(c) = comment {
            data.insert("comment".into(), Value::String(c));
        }
        data.insert("beacons".into(), Value::Object(self.opts_beacons()));
        Change {
            tag,
            data: Value::Object(data),
        }
    }

    /// Salt's `add_beacon`.
    pub fn add(&self, name: &str, data: Value, pillar: &Value) -> Change {
        const TAG: &str = "/salt/minion/minion_beacon_add_complete";
        if Self::in_pillar(pillar, name) {
            let c =
                format!("Cannot update beacon item {name}, because it is configured in pillar.");
            return self.answer(TAG, false, Some(c));
        }
        let comment = {
            let mut b = self.lock();
            let c = if b.contains_key(name) {
                format!("Updating settings for beacon item: {name}")
            } else {
                format!("Added new beacon item: {name}")
            };
            b.insert(name.to_owned(), data);
            c
        };
        self.answer(TAG, true, Some(comment))
    }

    /// Salt's `modify_beacon`.
    pub fn modify(&self, name: &str, data: Value, pillar: &Value) -> Change {
        const TAG: &str = "/salt/minion/minion_beacon_modify_complete";
        if Self::in_pillar(pillar, name) {
            let c = format!("Cannot modify beacon item {name}, it is configured in pillar.");
            return self.answer(TAG, false, Some(c));
        }
        self.lock().insert(name.to_owned(), data);
        let c = format!("Updating settings for beacon item: {name}");
        self.answer(TAG, true, Some(c))
    }

    /// Salt's `delete_beacon`.
    pub fn delete(&self, name: &str, pillar: &Value) -> Change {
        const TAG: &str = "/salt/minion/minion_beacon_delete_complete";
        if Self::in_pillar(pillar, name) {
            let c = format!("Cannot delete beacon item {name}, it is configured in pillar.");
            return self.answer(TAG, false, Some(c));
        }
        let c = match self.lock().shift_remove(name) {
            Some(_) => format!("Deleting beacon item: {name}"),
            None => format!("Beacon item {name} not found."),
        };
        self.answer(TAG, true, Some(c))
    }

    /// Salt's `enable_beacons` / `disable_beacons`: the option's `enabled` key.
    pub fn set_all_enabled(&self, enabled: bool) -> Change {
        self.lock().insert("enabled".into(), Value::Bool(enabled));
        let tag = if enabled {
            "/salt/minion/minion_beacons_enabled_complete"
        } else {
            "/salt/minion/minion_beacons_disabled_complete"
        };
        self.answer(tag, true, None)
    }

    /// Salt's `enable_beacon` / `disable_beacon`: the beacon's own `enabled` item.
    pub fn set_enabled(&self, name: &str, enabled: bool, pillar: &Value) -> Change {
        let (tag, verb) = if enabled {
            ("/salt/minion/minion_beacon_enabled_complete", "enable")
        } else {
            ("/salt/minion/minion_beacon_disabled_complete", "disable")
        };
        if Self::in_pillar(pillar, name) {
            let c = format!("Cannot {verb} beacon item {name}, it is configured in pillar.");
            return self.answer(tag, false, Some(c));
        }
        {
            let mut b = self.lock();
            match b.get_mut(name) {
                Some(Value::Object(m)) => {
                    m.insert("enabled".into(), Value::Bool(enabled));
                }
                Some(Value::Array(items)) => {
                    match items
                        .iter_mut()
                        .find(|i| i.as_object().is_some_and(|m| m.contains_key("enabled")))
                    {
                        Some(item) => item["enabled"] = Value::Bool(enabled),
                        None => items.push(json!({"enabled": enabled})),
                    }
                }
                _ => {}
            }
        }
        let verb = if enabled { "Enabling" } else { "Disabling" };
        self.answer(tag, true, Some(format!("{verb} beacon item {name}")))
    }

    /// Salt's `reset`: no beacons in the option.
    pub fn reset(&self) -> Change {
        self.lock().clear();
        let c = "Beacons have been reset".to_owned();
        self.answer("/salt/minion/minion_beacon_reset_complete", true, Some(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mgr(v: Value) -> Manager {
        Manager::new(
            v.as_object().cloned().unwrap_or_default(),
            PathBuf::from("/nonexistent"),
        )
    }

    #[test]
    fn changes_answer_salts_completion_events() {
        let m = mgr(json!({"load": [{"averages": {"1m": [0, 2]}}]}));
        let pillar = json!({"beacons": {"ps": [{"processes": {}}]}});
        let c = m.add("diskusage", json!([{"/": "90%"}]), &pillar);
        assert_eq!(c.tag, "/salt/minion/minion_beacon_add_complete");
        assert_eq!(
            c.data,
            json!({"complete": true, "comment": "Added new beacon item: diskusage",
                   "beacons": {"load": [{"averages": {"1m": [0, 2]}}], "diskusage": [{"/": "90%"}]}})
        );
        let c = m.add("diskusage", json!([{"/": "80%"}]), &pillar);
        assert_eq!(c.comment(), "Updating settings for beacon item: diskusage");
        let c = m.add("ps", json!([]), &pillar);
        assert!(!c.complete());
        assert_eq!(
            c.comment(),
            "Cannot update beacon item ps, because it is configured in pillar."
        );
        let c = m.set_enabled("load", false, &pillar);
        assert_eq!(
            c.beacons()["load"],
            json!([{"averages": {"1m": [0, 2]}}, {"enabled": false}])
        );
        let c = m.set_enabled("load", true, &pillar);
        assert_eq!(c.beacons()["load"][1], json!({"enabled": true}));
        assert_eq!(c.comment(), "Enabling beacon item load");
        let c = m.set_all_enabled(false);
        assert_eq!(c.data["beacons"]["enabled"], json!(false));
        assert_eq!(c.data.get("comment"), None);
        assert_eq!(
            m.delete("nope", &pillar).comment(),
            "Beacon item nope not found."
        );
        assert_eq!(
            m.delete("load", &pillar).comment(),
            "Deleting beacon item: load"
        );
        assert_eq!(
            m.list(&pillar, true, true),
            json!({"ps": [{"processes": {}}], "diskusage": [{"/": "80%"}], "enabled": false})
        );
        let c = m.reset();
        assert_eq!(
            c.data,
            json!({"complete": true, "comment": "Beacons have been reset", "beacons": {}})
        );
    }

    #[test]
    fn pillar_beacons_replace_the_options_as_salts_config_merge() {
        let m = mgr(json!({"load": []}));
        assert_eq!(Value::Object(m.effective(&json!({}))), json!({"load": []}));
        assert_eq!(
            Value::Object(m.effective(&json!({"beacons": {"ps": []}}))),
            json!({"ps": []})
        );
    }

    #[test]
    fn saved_beacons_are_read_back_over_the_config() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("minion.d")).unwrap();
        std::fs::write(
            saved_file(dir.path()),
            "beacons:\n  ps:\n  - processes:\n      sshd: running\n",
        )
        .unwrap();
        let m = Manager::load(&json!({"beacons": {"load": []}}), dir.path()).unwrap();
        assert_eq!(
            Value::Object(m.opts_beacons()),
            json!({"load": [], "ps": [{"processes": {"sshd": "running"}}]})
        );
        let bad = Manager::load(&json!({"beacons": [1]}), dir.path()).unwrap_err();
        assert!(bad.starts_with("key beacons: expected a mapping"), "{bad}");
    }
}
