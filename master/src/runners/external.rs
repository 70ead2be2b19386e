//! External runners: executables in `runner_dirs` (and those synced from `file_roots/_runners`),
//! called as `EXE FUNCTION` with `{"args": [...], "kwargs": {...}}` as JSON on stdin; they print
//! the return as JSON on stdout. A runner that prints invalid JSON, fails or hangs gives an error,
//! never a stuck master.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt;

/// The executable for `module.function`: `DIR/module`, `DIR/module.py` or `DIR/module.sh`.
pub fn find(dirs: &[PathBuf], fun: &str) -> Option<PathBuf> {
    let (module, _) = fun.split_once('.')?;
    if module.is_empty() || module.contains('/') {
        return None;
    }
    dirs.iter().find_map(|d| {
        ["", ".py", ".sh"]
            .iter()
            .map(|ext| d.join(format!("{module}{ext}")))
            .find(|p| p.is_file())
    })
}

/// Runs an external runner.
pub async fn run(
    exe: &Path,
    fun: &str,
    args: &[Value],
    kwargs: &Map<String, Value>,
    timeout: Duration,
) -> Result<Value, String> {
    let function = fun.split_once('.').map(|(_, f)| f).unwrap_or(fun);
    let mut child = tokio::process::Command::new(exe)
        .arg(function)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run external runner {}: {e}", exe.display()))?;
    let input = json!({"args": args, "kwargs": kwargs}).to_string();
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes()).await;
    }
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| {
            format!(
                "external runner {} did not finish within {timeout:?} and was killed",
                exe.display()
            )
        })?
        .map_err(|e| format!("external runner {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "external runner {} exited with {}: {}",
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_str(stdout.trim()).map_err(|e| {
        format!(
            "external runner {} printed invalid JSON ({e}): {}",
            exe.display(),
            stdout.trim()
        )
    })
}

/// Copies `ROOT/_runners/*` of each file root into `dest`; returns the module names.
pub fn sync(file_roots: &[PathBuf], dest: &Path) -> std::io::Result<Vec<String>> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dest)?;
    let mut names = Vec::new();
    for root in file_roots {
        let Ok(dir) = std::fs::read_dir(root.join("_runners")) else {
            continue;
        };
        for e in dir.flatten() {
            let p = e.path();
            if !p.is_file() {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let target = dest.join(&name);
            std::fs::copy(&p, &target)?;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
            names.push(name.split('.').next().unwrap_or(&name).to_owned());
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}
