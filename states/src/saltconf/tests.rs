//! The loader's merge rules against what Salt 3007.8's `master_config`/`minion_config` do
//! (recorded from its source, `salt/config/__init__.py` and `salt/utils/dictupdate.py`).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::keys::{self, Kind};
use super::{Daemon, include_order, load, main_file, update};

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// A scratch config directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("saltq-saltconf-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn update_merges_maps_and_joins_lists_without_repeats() {
    let mut dest = map(json!({"a": {"x": 1, "y": [1, 2]}, "b": [1], "c": "keep", "d": {"k": 1}}));
    update(
        &mut dest,
        map(json!({"a": {"y": [2, 3], "z": 0}, "b": [1, 4], "d": "scalar", "e": null})),
        true,
    );
    assert_eq!(
        Value::Object(dest.clone()),
        json!({"a": {"x": 1, "y": [1, 2, 3], "z": 0}, "b": [1, 4], "c": "keep", "d": "scalar", "e": null})
    );
    update(&mut dest, map(json!({"b": [9]})), false);
    assert_eq!(dest["b"], json!([9]));
}

#[test]
fn include_order_is_sorted_by_path() {
    let got = include_order(vec![
        "/e/master.d/b.conf".into(),
        "/e/master.d/_schedule.conf".into(),
        "/e/master.d/A.conf".into(),
        "/e/master.d/10.conf".into(),
    ]);
    let want: Vec<PathBuf> = [
        "/e/master.d/10.conf",
        "/e/master.d/A.conf",
        "/e/master.d/_schedule.conf",
        "/e/master.d/b.conf",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(got, want);
}

#[test]
fn the_environment_names_the_file_only_for_the_default_directory() {
    let files = ["/srv/alt/master", "/cfg/master", "/etc/saltq/master"];
    let is_file = |p: &Path| files.iter().any(|f| Path::new(f) == p);
    let default = Path::new("/etc/saltq");
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    let with_var = env(&[("SALT_MASTER_CONFIG", "/srv/alt/master")]);
    assert_eq!(
        main_file(Daemon::Master, default, default, &with_var, &is_file),
        Path::new("/srv/alt/master")
    );
    // `-c` elsewhere wins over the environment, as Salt's `path != default_path`.
    assert_eq!(
        main_file(
            Daemon::Master,
            Path::new("/cfg"),
            default,
            &with_var,
            &is_file
        ),
        Path::new("/cfg/master")
    );
    // A variable naming no file is ignored.
    let missing = env(&[("SALT_MASTER_CONFIG", "/nowhere/master")]);
    assert_eq!(
        main_file(Daemon::Master, default, default, &missing, &is_file),
        Path::new("/etc/saltq/master")
    );
    // SALT_CONFIG_DIR counts when the file variable is unset.
    let dir = env(&[("SALT_CONFIG_DIR", "/cfg")]);
    assert_eq!(
        main_file(Daemon::Master, default, default, &dir, &is_file),
        Path::new("/cfg/master")
    );
    // The minion's variable is its own.
    assert_eq!(
        main_file(Daemon::Minion, default, default, &with_var, &is_file),
        Path::new("/etc/saltq/minion")
    );
}

#[test]
fn master_d_overrides_the_main_file_and_include_comes_last() {
    let d = Dir::new("order");
    let main = d.write(
        "master",
        "auto_accept: false\nport: 4506\nfile_roots:\n  base: [/srv/salt]\ninclude: extra/*.yml\n",
    );
    d.write(
        "master.d/20-b.conf",
        "port: 4600\nnodegroups: {web: 'web*'}\n",
    );
    d.write(
        "master.d/10-a.conf",
        "auto_accept: true\nport: 4599\nfile_roots:\n  base: [/srv/formulas]\n",
    );
    d.write("master.d/ignored.txt", "port: 1\n");
    d.write("master.d/.hidden.conf", "port: 2\n");
    d.write("extra/x.yml", "port: 4700\n");
    let l = load(Daemon::Master, &main).unwrap();
    assert_eq!(l.opts["auto_accept"], json!(true));
    assert_eq!(l.opts["port"], json!(4700));
    // Within master.d lists join; over the main file the whole key is replaced (Salt's
    // `overrides.update`).
    assert_eq!(l.opts["file_roots"], json!({"base": ["/srv/formulas"]}));
    assert_eq!(l.opts["nodegroups"], json!({"web": "web*"}));
    assert_eq!(l.origin_of("auto_accept"), d.0.join("master.d/10-a.conf"));
    assert_eq!(l.origin_of("port"), d.0.join("extra/x.yml"));
    assert_eq!(
        l.files,
        vec![
            main.clone(),
            d.0.join("master.d/10-a.conf"),
            d.0.join("master.d/20-b.conf"),
            d.0.join("extra/x.yml")
        ]
    );
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
}

#[test]
fn files_within_one_include_merge_deeply() {
    let d = Dir::new("deep");
    let main = d.write("minion", "id: from-main\n");
    d.write(
        "minion.d/a.conf",
        "file_roots:\n  base: [/a]\ngrains:\n  roles: [web]\n",
    );
    d.write(
        "minion.d/b.conf",
        "file_roots:\n  base: [/b, /a]\n  dev: [/d]\ngrains:\n  roles: [db]\n  dc: x\n",
    );
    let l = load(Daemon::Minion, &main).unwrap();
    assert_eq!(
        l.opts["file_roots"],
        json!({"base": ["/a", "/b"], "dev": ["/d"]})
    );
    assert_eq!(l.opts["grains"], json!({"roles": ["web", "db"], "dc": "x"}));
    assert_eq!(l.opts["id"], json!("from-main"));
}

#[test]
fn schedule_jobs_from_a_later_file_replace_whole_jobs() {
    let d = Dir::new("sched");
    let main = d.write("minion", "");
    d.write(
        "minion.d/_schedule.conf",
        "schedule:\n  hs: {function: state.apply, minutes: 60, args: [a]}\n",
    );
    d.write(
        "minion.d/z.conf",
        "schedule:\n  hs: {function: state.apply, minutes: 5}\n  other: {function: test.ping, seconds: 10}\n",
    );
    let l = load(Daemon::Minion, &main).unwrap();
    assert_eq!(
        l.opts["schedule"],
        json!({"hs": {"function": "state.apply", "minutes": 5},
               "other": {"function": "test.ping", "seconds": 10}})
    );
}

#[test]
fn a_broken_schedule_conf_is_skipped_with_a_warning_and_other_files_refused() {
    let d = Dir::new("broken");
    let main = d.write("minion", "id: m1\n");
    d.write("minion.d/_schedule.conf", "schedule: [\n");
    let l = load(Daemon::Minion, &main).unwrap();
    assert_eq!(l.opts["id"], json!("m1"));
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("_schedule.conf") && w.contains("skipped")),
        "{:?}",
        l.warnings
    );
    d.write("minion.d/other.conf", "a: [\n");
    let e = load(Daemon::Minion, &main).unwrap_err();
    assert_eq!(e.path, d.0.join("minion.d/other.conf"));
}

#[test]
fn a_duplicate_key_is_salts_conflicting_id_naming_file_key_and_line() {
    let d = Dir::new("dup");
    let main = d.write("minion", "");
    d.write(
        "minion.d/auth.conf",
        "auto_accept: true\nport: 1\nauto_accept: false\n",
    );
    let e = load(Daemon::Minion, &main).unwrap_err();
    assert_eq!(e.path, d.0.join("minion.d/auth.conf"));
    assert_eq!(e.key.as_deref(), Some("auto_accept"));
    assert!(
        e.message.contains("found conflicting ID 'auto_accept'") && e.message.contains("line 3"),
        "{}",
        e.message
    );
}

/// Recorded from Salt 3007.8 (`master_config`, `minion_config(ignore_config_errors=False)` as
/// salt-minion calls it): the master logs an included file with a YAML error and goes on
/// without it; the minion exits 1; a nested include's broken file is skipped by both; a
/// broken main file stops both.
#[test]
fn a_broken_included_file_is_skipped_by_the_master_and_refused_by_the_minion() {
    let d = Dir::new("broken-include");
    let master = d.write("master", "auto_accept: true\n");
    d.write("master.d/bad.conf", "a: [\n");
    d.write("master.d/dup.conf", "x: 1\nx: 2\n");
    d.write("master.d/list.conf", "- a\n");
    d.write("master.d/good.conf", "timeout: 9\ninclude: nested/*.conf\n");
    d.write("master.d/nested/n.conf", "b: {\n");
    let l = load(Daemon::Master, &master).unwrap();
    assert_eq!(l.opts["auto_accept"], json!(true));
    assert_eq!(l.opts["timeout"], json!(9));
    for f in ["bad.conf", "dup.conf", "list.conf", "nested/n.conf"] {
        assert!(
            l.warnings
                .iter()
                .any(|w| w.contains(&format!("master.d/{f}")) && w.contains("skipped")),
            "{f}: {:?}",
            l.warnings
        );
    }
    assert!(!l.files.contains(&d.0.join("master.d/bad.conf")));
    let minion = d.write("minion", "id: m1\n");
    d.write("minion.d/good.conf", "include: nested/*.conf\n");
    d.write("minion.d/nested/n.conf", "b: {\n");
    let l = load(Daemon::Minion, &minion).unwrap();
    assert_eq!(l.opts["id"], json!("m1"));
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    d.write("minion.d/bad.conf", "a: [\n");
    let e = load(Daemon::Minion, &minion).unwrap_err();
    assert_eq!(e.path, d.0.join("minion.d/bad.conf"));
    d.write("master", "a: [\n");
    let e = load(Daemon::Master, &master).unwrap_err();
    assert_eq!(e.path, master);
}

#[test]
fn relative_absolute_nested_and_missing_includes() {
    let d = Dir::new("incl");
    let main = d.write(
        "master",
        &format!(
            "include:\n  - conf/one.conf\n  - {}/abs/*.conf\n  - nothing/*.conf\ndefault_include: custom.d/*.conf\n",
            d.0.display()
        ),
    );
    d.write("conf/one.conf", "include: two.conf\ntimeout: 7\n");
    d.write("conf/two.conf", "timeout: 8\ngather_job_timeout: 3\n");
    d.write("abs/z.conf", "keep_jobs_seconds: 60\n");
    d.write("custom.d/c.conf", "presence_events: true\n");
    d.write("master.d/not-read.conf", "presence_events: false\n");
    let l = load(Daemon::Master, &main).unwrap();
    // A file's own include is applied over it (Salt's `opts.update(include_config(...))`).
    assert_eq!(l.opts["timeout"], json!(8));
    assert_eq!(l.opts["gather_job_timeout"], json!(3));
    assert_eq!(l.opts["keep_jobs_seconds"], json!(60));
    assert_eq!(l.opts["presence_events"], json!(true));
    assert!(
        l.warnings.iter().any(|w| w.contains("nothing/*.conf")),
        "{:?}",
        l.warnings
    );
    d.write("conf/two.conf", "include: one.conf\n");
    let e = load(Daemon::Master, &main).unwrap_err();
    assert!(e.message.contains("nested more than"), "{}", e.message);
}

#[test]
fn numeric_ids_become_strings_and_a_null_id_is_no_id() {
    let d = Dir::new("id");
    let main = d.write("minion", "id: 1234\n");
    assert_eq!(
        load(Daemon::Minion, &main).unwrap().opts["id"],
        json!("1234")
    );
    d.write("minion", "id:\n");
    assert!(!load(Daemon::Minion, &main).unwrap().opts.contains_key("id"));
    d.write("minion", "- a list\n");
    let e = load(Daemon::Minion, &main).unwrap_err();
    assert!(e.message.contains("must be a mapping"), "{}", e.message);
}

#[test]
fn salt_scalars_are_yaml_1_1() {
    let d = Dir::new("yaml11");
    let main = d.write(
        "master",
        "auto_accept: yes\njob_cache: True\nevent_return: ''\nmode: 0644\n",
    );
    let l = load(Daemon::Master, &main).unwrap();
    assert_eq!(l.opts["auto_accept"], json!(true));
    assert_eq!(l.opts["job_cache"], json!(true));
    assert_eq!(l.opts["event_return"], json!(""));
    assert_eq!(l.opts["mode"], json!(644));
}

#[test]
fn a_missing_main_file_still_reads_the_includes() {
    let d = Dir::new("nomain");
    d.write("minion.d/id.conf", "id: from-d\n");
    let l = load(Daemon::Minion, &d.0.join("minion")).unwrap();
    assert_eq!(l.opts["id"], json!("from-d"));
    assert_eq!(l.files, vec![d.0.join("minion.d/id.conf")]);
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct Sample {
    port: u16,
    #[serde(rename = "hosts.file")]
    hosts_file: String,
}

#[test]
fn struct_fields_lists_serde_names() {
    assert_eq!(super::struct_fields::<Sample>(), &["port", "hosts.file"]);
}

#[test]
fn keys_are_classified_and_unknown_ones_get_the_closest() {
    let fields = &["port", "auto_accept", "file_roots"];
    let none = |_: &str| false;
    let c = |k| keys::classify(Daemon::Master, k, fields, &none);
    assert_eq!(c("port"), Some(Kind::Implemented("")));
    assert_eq!(c("default_include"), Some(Kind::Implemented("")));
    assert!(matches!(c("worker_threads"), Some(Kind::NoEffect(_))));
    assert!(matches!(c("gitfs_remotes"), Some(Kind::NotYet(_))));
    assert_eq!(c("prot"), None);
    assert!(matches!(
        keys::classify(Daemon::Minion, "test.foo", fields, &none),
        Some(Kind::Implemented(_))
    ));
    assert_eq!(
        keys::closest(Daemon::Master, "prot", fields).as_deref(),
        Some("port")
    );
    assert_eq!(
        keys::closest(Daemon::Master, "worker_thread", fields).as_deref(),
        Some("worker_threads")
    );
    assert_eq!(keys::closest(Daemon::Master, "zzzzzzzz", fields), None);
    // The returner options are taken by the caller's predicate.
    let returner = |k: &str| k.starts_with("mysql.");
    assert_eq!(
        keys::classify(Daemon::Master, "mysql.host", fields, &returner),
        Some(Kind::Implemented(""))
    );
}

#[test]
fn the_report_names_the_file_of_an_unknown_key() {
    let d = Dir::new("report");
    let main = d.write("master", "port: 4506\nworker_threads: 8\n");
    d.write("master.d/x.conf", "auto_acept: true\ngitfs_remotes: [x]\n");
    let l = load(Daemon::Master, &main).unwrap();
    let fields = &["port", "auto_accept"];
    let r = keys::Report::new(Daemon::Master, &l, fields, &|_| false);
    let e = r.check(Daemon::Master).unwrap_err();
    assert_eq!(e.path, d.0.join("master.d/x.conf"));
    assert!(
        e.message.contains("unknown key `auto_acept`")
            && e.message.contains("did you mean `auto_accept`?"),
        "{}",
        e.message
    );
    let lines = r.lines();
    assert!(lines[0].starts_with("port: implemented ["), "{lines:?}");
    assert!(
        lines[1].starts_with("worker_threads: no effect ("),
        "{lines:?}"
    );
    assert!(
        lines[3].starts_with("gitfs_remotes: not yet ("),
        "{lines:?}"
    );
    assert_eq!(r.not_yet().count(), 1);
}

#[test]
fn every_table_key_is_declared_once() {
    for daemon in [Daemon::Master, Daemon::Minion] {
        let mut seen = std::collections::BTreeSet::new();
        for (keys, _) in keys::table(daemon) {
            for k in *keys {
                assert!(seen.insert(*k), "{k} twice in the {daemon:?} table");
            }
        }
    }
}
