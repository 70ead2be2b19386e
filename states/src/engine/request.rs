//! `state.request` and friends: a state run recorded for the local admin to apply later,
//! kept in `<cachedir>/req_state.json` as `{name: {test_run, mods, kwargs}}` (Salt's
//! `req_state.p`, in JSON).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The request file.
pub fn path(cachedir: &Path) -> PathBuf {
    cachedir.join("req_state.json")
}

/// Every recorded request, `{}` when none (`state.check_request`).
pub fn read(cachedir: &Path) -> Map<String, Value> {
    std::fs::read(path(cachedir))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

/// Writes the requests, readable by the owner only (Salt writes under umask 077).
pub fn write(cachedir: &Path, req: &Map<String, Value>) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(cachedir)?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path(cachedir))?;
    f.write_all(&serde_json::to_vec(&Value::Object(req.clone())).unwrap_or_default())
}

/// `state.clear_request`: all of them without a name (true even when none were recorded);
/// with a name, false when there is no such request.
pub fn clear(cachedir: &Path, name: Option<&str>) -> std::io::Result<bool> {
    if !path(cachedir).is_file() {
        return Ok(true);
    }
    match name {
        None => {
            let _ = std::fs::remove_file(path(cachedir));
            Ok(true)
        }
        Some(name) => {
            let mut req = read(cachedir);
            if req.remove(name).is_none() {
                return Ok(false);
            }
            write(cachedir, &req)?;
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_round_trip_and_clear_as_salt() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).is_empty());
        assert!(clear(dir.path(), Some("x")).unwrap(), "no file: true");
        let mut req = Map::new();
        req.insert(
            "default".into(),
            json!({"mods": "web", "kwargs": {}, "test_run": {}}),
        );
        write(dir.path(), &req).unwrap();
        assert_eq!(read(dir.path()), req);
        assert!(!clear(dir.path(), Some("other")).unwrap());
        assert!(clear(dir.path(), Some("default")).unwrap());
        assert!(read(dir.path()).is_empty());
        assert!(path(dir.path()).exists());
        assert!(clear(dir.path(), None).unwrap());
        assert!(!path(dir.path()).exists());
    }
}
