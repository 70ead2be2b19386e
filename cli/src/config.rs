//! `saltq config check DIR`: what saltq does with each key of a master or minion config
//! directory (Salt's `/etc/salt` as it is). The daemon that would read the directory answers
//! (`saltq-master --check-config`, `saltq-minion --check-config`), so the report and the exit
//! code are its own loader's: 0 when it would start, 64 when it would not.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::exit;

/// The master's config in `dir` as the master reads it (`saltq_states::saltconf`, the same
/// loader): `DIR/master` (or the file `SALT_MASTER_CONFIG` names), `master.d/*.conf` over it,
/// then `include`. Salt's `salt` CLI reads the master's config the same way. Keys are not
/// classified here: the master refuses the unknown ones at start.
pub fn master_opts(dir: &Path) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    use saltq_states::saltconf::{Daemon, load, main_file};
    let file = main_file(
        Daemon::Master,
        dir,
        Path::new(DEFAULT_DIR),
        &|k| std::env::var(k).ok(),
        &|p| p.is_file(),
    );
    let loaded = load(Daemon::Master, &file)
        .map_err(|e| anyhow::anyhow!("invalid config file {}: {e}", e.path.display()))?;
    Ok(loaded.opts)
}

/// The master's default config directory (`saltq-master -c`'s default).
const DEFAULT_DIR: &str = "/etc/saltq";

/// `saltq config ...`.
#[derive(clap::Subcommand)]
pub enum ConfigCmd {
    /// Print each key of DIR's config with what saltq does with it: implemented, no effect
    /// (and why), not yet (and what saltq does instead), or unknown; exit 0 when the daemon
    /// would start with it, 64 when not.
    Check(CheckArgs),
}

/// `saltq config check`'s arguments.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The config directory (holding `master` and `master.d/`, or `minion` and `minion.d/`).
    dir: PathBuf,
    /// Check DIR as a `master` or a `minion` config (default: whichever DIR holds; both when
    /// it holds both). Not `--master`, which names the master to dial.
    #[arg(long = "as", value_parser = ["master", "minion"])]
    as_daemon: Option<String>,
}

/// The daemons whose config `dir` holds: `master` or `master.d`, `minion` or `minion.d`.
fn detect(dir: &Path) -> Vec<&'static str> {
    ["master", "minion"]
        .into_iter()
        .filter(|d| dir.join(d).exists() || dir.join(format!("{d}.d")).is_dir())
        .collect()
}

/// The daemon's binary: beside this one when it is there (an install, `target/debug`), else
/// found on `PATH`.
fn binary(daemon: &str) -> PathBuf {
    let name = format!("saltq-{daemon}");
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(&name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Runs the check; the exit code is the worst of the daemons checked.
pub fn run(cmd: &ConfigCmd) -> i32 {
    let ConfigCmd::Check(args) = cmd;
    let daemons = match args.as_daemon.as_deref() {
        Some("master") => vec!["master"],
        Some(_) => vec!["minion"],
        None => detect(&args.dir),
    };
    if daemons.is_empty() {
        eprintln!(
            "saltq: {} holds no master or minion config (master, master.d/, minion, minion.d/): \
             give --as master or --as minion to check it anyway",
            args.dir.display()
        );
        return exit::USAGE;
    }
    let mut code = exit::OK;
    for daemon in &daemons {
        if daemons.len() > 1 {
            println!("## {daemon}");
        }
        let bin = binary(daemon);
        let status = Command::new(&bin)
            .arg("--check-config")
            .arg("-c")
            .arg(&args.dir)
            .status();
        match status {
            Ok(s) => code = code.max(s.code().unwrap_or(exit::GENERIC)),
            Err(e) => {
                eprintln!(
                    "saltq: cannot run {} to check the {daemon} config: {e}",
                    bin.display()
                );
                code = code.max(exit::UNAVAILABLE);
            }
        }
    }
    code
}
