//! Running one command for `cmd.*`: its own process group, output collected (stderr merged
//! into stdout on request), an optional timeout, and the whole group killed when the command
//! times out or when the job's future is dropped before the command is done.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::context::ProcessGroups;

/// What to run and how.
#[derive(Debug, Clone, Default)]
pub(crate) struct Spawn {
    /// Program and arguments; the program is looked up in `env`'s `PATH`.
    pub argv: Vec<OsString>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The complete environment of the command.
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to the command's stdin, then closed; `None` gives it `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Send stderr into the same pipe as stdout, interleaved as written.
    pub merge_stderr: bool,
    /// Kill the command's process group after this long.
    pub timeout: Option<Duration>,
    /// Run as this uid (the minion must be root); supplementary groups are dropped.
    pub uid: Option<u32>,
    /// Run with this primary gid.
    pub gid: Option<u32>,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finished {
    /// It exited (or was killed by a signal, as a negative code, as Python reports it).
    Exited {
        pid: u32,
        code: i32,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
    /// The timeout expired; its process group was killed and its output dropped.
    TimedOut { pid: u32 },
}

/// Kills a command's process group when dropped while still armed, and keeps the group
/// listed in the job's [`ProcessGroups`] meanwhile.
struct GroupGuard {
    pgid: i32,
    groups: ProcessGroups,
    armed: bool,
}

impl GroupGuard {
    fn new(pgid: i32, groups: &ProcessGroups) -> Self {
        groups.insert(pgid);
        Self {
            pgid,
            groups: groups.clone(),
            armed: true,
        }
    }

    fn kill(&self) {
        // ESRCH (the group is already gone) is the only expected failure, and harmless.
        let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
    }

    /// The command finished on its own: leave whatever it started in the background alone,
    /// as Salt does.
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
        self.groups.remove(self.pgid);
    }
}

/// Runs `spec` to completion or timeout. Errors are failures to start the command (or to
/// read its output); a non-zero exit is a normal [`Finished::Exited`].
pub(crate) async fn run(spec: &Spawn, groups: &ProcessGroups) -> io::Result<Finished> {
    let (program, args) = spec
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .kill_on_drop(true)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    if let Some(uid) = spec.uid {
        command.uid(uid);
    }
    if let Some(gid) = spec.gid {
        command.gid(gid);
    }
    let merged = if spec.merge_stderr {
        let (reader, writer) = io::pipe()?;
        command.stdout(writer.try_clone()?).stderr(writer);
        Some(reader)
    } else {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        None
    };
    let mut child = command.spawn()?;
    // Dropping the command closes our copies of the merged pipe's write end, so that reading
    // sees end-of-file when the command's side closes.
    drop(command);
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the command exited before it had a pid"))?;
    let pgid = i32::try_from(pid).map_err(io::Error::other)?;
    let mut guard = GroupGuard::new(pgid, groups);

    let merged = match merged {
        Some(reader) => Some(tokio::net::unix::pipe::Receiver::from_owned_fd(
            OwnedFd::from(reader),
        )?),
        None => None,
    };
    let stdin = child.stdin.take();
    let input = spec.stdin.clone();
    let feed = async move {
        if let (Some(mut pipe), Some(data)) = (stdin, input) {
            // A command that does not read its input closes the pipe early; that is fine.
            let _ = pipe.write_all(&data).await;
        }
    };
    let stdout = read_all(merged, child.stdout.take());
    let stderr = read_all(
        None::<tokio::net::unix::pipe::Receiver>,
        child.stderr.take(),
    );
    let work = async {
        let ((), out, err) = tokio::join!(feed, stdout, stderr);
        let status = child.wait().await?;
        Ok::<_, io::Error>((out?, err?, status))
    };
    let outcome = match spec.timeout {
        Some(limit) => tokio::time::timeout(limit, work).await.ok(),
        None => Some(work.await),
    };
    match outcome {
        Some(result) => {
            let (stdout, stderr, status) = result?;
            guard.disarm();
            let code = status
                .code()
                .or_else(|| status.signal().map(|s| -s))
                .unwrap_or(-1);
            Ok(Finished::Exited {
                pid,
                code,
                stdout,
                stderr,
            })
        }
        None => {
            guard.kill();
            // Reap the leader now so that it does not linger as a zombie.
            let _ = child.wait().await;
            Ok(Finished::TimedOut { pid })
        }
    }
}

/// What a helper command (`df`, `systemctl`, `dpkg-query`, ...) printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Output {
    /// Its exit code (negative: killed by that signal).
    pub code: i32,
    /// Its standard output, decoded (invalid UTF-8 replaced).
    pub stdout: String,
    /// Its standard error, decoded.
    pub stderr: String,
}

/// Runs a helper command directly (no shell) with the `C` locale, so that its output parses
/// the same everywhere, plus `extra_env`, in a process group listed in `groups`. `NotFound`
/// when the program does not exist.
pub(crate) async fn output(
    argv: &[&str],
    stdin: Option<&[u8]>,
    extra_env: &[(&str, &str)],
    groups: &ProcessGroups,
) -> io::Result<Output> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| k != "LANG" && k != "LANGUAGE" && !k.to_string_lossy().starts_with("LC_"))
        .collect();
    env.push(("LC_ALL".into(), "C".into()));
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    let spec = Spawn {
        argv: argv.iter().map(OsString::from).collect(),
        cwd: PathBuf::from("/"),
        env,
        stdin: stdin.map(<[u8]>::to_vec),
        ..Spawn::default()
    };
    match run(&spec, groups).await? {
        Finished::Exited {
            code,
            stdout,
            stderr,
            ..
        } => Ok(Output {
            code,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }),
        Finished::TimedOut { .. } => Err(io::Error::from(io::ErrorKind::TimedOut)),
    }
}

/// Reads whichever of the two sources is present to its end.
async fn read_all(
    first: Option<impl AsyncRead + Unpin>,
    second: Option<impl AsyncRead + Unpin>,
) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    if let Some(mut r) = first {
        r.read_to_end(&mut buf).await?;
    } else if let Some(mut r) = second {
        r.read_to_end(&mut buf).await?;
    }
    Ok(buf)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Whether a process is alive (a zombie counts as dead: it runs no more code).
    pub(crate) fn alive(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state is the first field after the parenthesised command name.
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X"),
            Err(_) => false,
        }
    }

    /// Waits (in real time, up to 5 s) for a condition to hold.
    pub(crate) async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
        for _ in 0..100 {
            if cond() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cond()
    }

    fn sh(script: &str) -> Spawn {
        Spawn {
            argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
            cwd: "/".into(),
            env: std::env::vars_os().collect(),
            ..Spawn::default()
        }
    }

    #[tokio::test]
    async fn collects_output_and_code() {
        let groups = ProcessGroups::default();
        let got = run(&sh("echo out; echo err >&2; exit 3"), &groups).await;
        let Ok(Finished::Exited {
            code,
            stdout,
            stderr,
            ..
        }) = got
        else {
            panic!("unexpected {got:?}");
        };
        assert_eq!(
            (code, stdout.as_slice(), stderr.as_slice()),
            (3, &b"out\n"[..], &b"err\n"[..])
        );
        assert!(groups.pgids().is_empty());

        let mut merged = sh("echo a; echo b >&2; echo c");
        merged.merge_stderr = true;
        merged.stdin = Some(b"ignored".to_vec());
        let got = run(&merged, &groups).await;
        assert!(
            matches!(&got, Ok(Finished::Exited { code: 0, stdout, stderr, .. }) if stdout == b"a\nb\nc\n" && stderr.is_empty()),
            "{got:?}"
        );

        let mut cat = sh("cat");
        cat.stdin = Some(b"one\ntwo".to_vec());
        let got = run(&cat, &groups).await;
        assert!(matches!(&got, Ok(Finished::Exited { stdout, .. }) if stdout == b"one\ntwo"));

        let got = run(&sh("kill -TERM $$"), &groups).await;
        assert!(
            matches!(got, Ok(Finished::Exited { code: -15, .. })),
            "{got:?}"
        );
    }

    /// Records what a [`crate::GroupWatch`] is told.
    #[derive(Default)]
    struct Log(std::sync::Mutex<Vec<String>>);

    impl crate::GroupWatch for Log {
        fn started(&self, pgid: i32) {
            self.0.lock().unwrap().push(format!("+{pgid}"));
        }
        fn ended(&self, pgid: i32) {
            self.0.lock().unwrap().push(format!("-{pgid}"));
        }
    }

    #[tokio::test]
    async fn the_watch_hears_of_each_group_from_spawn_to_end() {
        let log = std::sync::Arc::new(Log::default());
        let groups = ProcessGroups::watched(log.clone());
        // A job's own set reports to the same watch.
        let job = groups.fresh();
        let Ok(Finished::Exited { pid, .. }) = run(&sh("true"), &job).await else {
            panic!("true did not run");
        };
        let mut slow = sh("sleep 30");
        slow.timeout = Some(Duration::from_millis(200));
        let Ok(Finished::TimedOut { pid: slow_pid }) = run(&slow, &job).await else {
            panic!("sleep did not time out");
        };
        assert_eq!(
            *log.0.lock().unwrap(),
            [
                format!("+{pid}"),
                format!("-{pid}"),
                format!("+{slow_pid}"),
                format!("-{slow_pid}")
            ]
        );
        // An unwatched set tells no one.
        let _ = run(&sh("true"), &ProcessGroups::default()).await;
        assert_eq!(log.0.lock().unwrap().len(), 4);
    }

    #[tokio::test]
    async fn missing_program_is_an_error() {
        let spec = Spawn {
            argv: vec!["/nonexistent/prog".into()],
            cwd: "/".into(),
            ..Spawn::default()
        };
        let err = run(&spec, &ProcessGroups::default()).await.err();
        assert_eq!(err.map(|e| e.kind()), Some(io::ErrorKind::NotFound));
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        // The shell starts a grandchild in the same group and reports its pid.
        let dir = std::env::temp_dir().join(format!("saltq-exec-timeout-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let pidfile = dir.join("grandchild");
        let mut spec = sh(&format!("sleep 30 & echo $! > {}; wait", pidfile.display()));
        spec.timeout = Some(Duration::from_millis(500));
        let groups = ProcessGroups::default();
        let got = run(&spec, &groups).await;
        let Ok(Finished::TimedOut { pid }) = got else {
            panic!("unexpected {got:?}");
        };
        let grandchild: u32 = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        assert!(grandchild > 0, "the grandchild's pid was not written");
        assert!(!alive(pid), "the leader {pid} survived its timeout");
        assert!(
            eventually(|| !alive(grandchild)).await,
            "grandchild {grandchild} survived"
        );
        assert!(groups.pgids().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
