//! The key table against Salt 3007.8's own tables, read from the installed Salt package at
//! test time (`SALTQ_TEST_SALT_PYTHON`, a Python with `salt==3007.8`; `SALTQ_TEST_SALT_CONF`, the
//! sdist's `conf/` directory for the keys only documented there; `.ci/run` installs both).
//! Without them the check says it skipped, unless `SALTQ_CI` is set: then it fails. Each
//! daemon's test calls [`assert_table_matches_salt`] with its `RawConfig`'s fields.

use std::path::Path;

use super::{Daemon, keys};

/// Salt's keys for `daemon`: its `DEFAULT_*_OPTS`, and (as the known set) `VALID_OPTS` and
/// the keys its shipped config file documents. `None` when Salt is not installed.
pub fn salt_keys(daemon: Daemon) -> Option<(Vec<String>, Vec<String>)> {
    let python = std::env::var("SALTQ_TEST_SALT_PYTHON").ok();
    let conf = std::env::var("SALTQ_TEST_SALT_CONF").ok();
    let (Some(python), Some(conf)) = (python, conf) else {
        assert!(
            std::env::var_os("SALTQ_CI").is_none(),
            "SALTQ_TEST_SALT_PYTHON and SALTQ_TEST_SALT_CONF must be set in CI"
        );
        eprintln!(
            "skipped: set SALTQ_TEST_SALT_PYTHON (a python with salt==3007.8) and \
             SALTQ_TEST_SALT_CONF (its sdist's conf/) to check the key table against Salt"
        );
        return None;
    };
    let table = match daemon {
        Daemon::Master => "DEFAULT_MASTER_OPTS",
        Daemon::Minion => "DEFAULT_MINION_OPTS",
    };
    let script = format!(
        "import json, salt.config as c, salt.version as v\n\
         assert v.__version__ == '3007.8', v.__version__\n\
         print(json.dumps([sorted(c.{table}), sorted(set(c.VALID_OPTS) | set(c.DEFAULT_MASTER_OPTS) | set(c.DEFAULT_MINION_OPTS))]))"
    );
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .output()
        .expect("run SALTQ_TEST_SALT_PYTHON");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (defaults, mut known): (Vec<String>, Vec<String>) =
        serde_json::from_slice(&out.stdout).expect("salt's key lists");
    // Keys the shipped file documents (`#key:` at the start of a line) are Salt's too.
    let text = std::fs::read_to_string(std::path::Path::new(&conf).join(daemon.name()))
        .expect("read the sdist's conf file");
    for line in text.lines() {
        let l = line.strip_prefix('#').unwrap_or(line);
        if let Some((k, _)) = l.split_once(':')
            && !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        {
            known.push(k.to_owned());
        }
    }
    Some((defaults, known))
}

/// Every key of Salt's `daemon` has a declared kind (a field among `fields`, or the table),
/// and the table holds only Salt's keys that are not fields. Panics with what is wrong.
pub fn assert_table_matches_salt(daemon: Daemon, fields: &[&str]) {
    let Some((defaults, known)) = salt_keys(daemon) else {
        return;
    };
    let defaults: Vec<&str> = defaults.iter().map(String::as_str).collect();
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    let missing = keys::undeclared(daemon, fields, &defaults);
    assert!(
        missing.is_empty(),
        "keys of Salt's {} with no kind in saltq (add them to saltconf/keys.rs): {missing:?}",
        daemon.name()
    );
    let stale = keys::stale(daemon, fields, &known);
    assert!(stale.is_empty(), "{stale:?}");
    assert!(defaults.len() > 250, "{}", defaults.len());
}

/// Salt 3007.8's own defaults for `daemon` (`DEFAULT_*_OPTS`) as JSON, `None` when Salt is
/// not installed (see [`salt_keys`]). Values JSON cannot hold are given as Salt's config file
/// would (tuples and sets as lists).
pub fn salt_defaults(daemon: Daemon) -> Option<serde_json::Map<String, serde_json::Value>> {
    salt_keys(daemon)?;
    let python = std::env::var("SALTQ_TEST_SALT_PYTHON").ok()?;
    let table = match daemon {
        Daemon::Master => "DEFAULT_MASTER_OPTS",
        Daemon::Minion => "DEFAULT_MINION_OPTS",
    };
    let script = format!(
        "import json, salt.config as c\n\
         def plain(v):\n    \
             if isinstance(v, dict) or hasattr(v, 'items'): return {{str(k): plain(x) for k, x in v.items()}}\n    \
             if not isinstance(v, (str, bytes)) and hasattr(v, '__iter__'): return [plain(x) for x in v]\n    \
             return v\n\
         print(json.dumps(plain(c.{table})))"
    );
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .output()
        .expect("run SALTQ_TEST_SALT_PYTHON");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("salt's defaults"))
}

/// Every default of Salt's `daemon`, written in one config file, loads into `T` (the daemon's
/// `RawConfig`) with saltq's loader: no Salt default is refused for its key or its value.
pub fn assert_salt_defaults_load<T: serde::de::DeserializeOwned>(daemon: Daemon) {
    let Some(defaults) = salt_defaults(daemon) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!(
        "saltq-salt-defaults-{}-{}",
        daemon.name(),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut opts = defaults;
    // Salt's own include globs point at /etc/salt; the loader is tested elsewhere.
    opts.remove("default_include");
    opts.remove("include");
    // JSON is YAML: the file is read by Salt's YAML loader as any config.
    std::fs::write(
        dir.join(daemon.name()),
        serde_json::to_string_pretty(&serde_json::Value::Object(opts)).unwrap(),
    )
    .unwrap();
    let loaded = super::daemon::load::<T>(daemon, &dir, Path::new("/nonexistent"), &|_| false);
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = loaded {
        panic!("Salt 3007.8's own {} defaults refused: {e}", daemon.name());
    }
}
