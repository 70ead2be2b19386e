//! Exit codes, as Salt's (`salt/defaults/exitcodes.py`) and the salt CLI use them.

/// Everything returned with retcode 0.
pub const OK: i32 = 0;
/// Some minion returned non-zero or did not return.
pub const GENERIC: i32 = 1;
/// Nothing returned, or nothing matched.
pub const NO_RETURN: i32 = 2;
/// Bad usage.
pub const USAGE: i32 = 64;
/// The master could not be reached.
pub const UNAVAILABLE: i32 = 69;
/// A file could not be created.
pub const CANTCREAT: i32 = 73;
/// Not permitted.
pub const NOPERM: i32 = 77;

/// The salt command's exit code once every return is in, and the line it prints to stderr:
/// 2 when nothing returned; with `--static` (which salt runs through its batch code) 0
/// whatever the retcodes; else 1 when any minion's retcode is not 0 (a failed state run
/// returns 2, a state tree that does not compile 1; `salt/cli/salt.py`), else 0.
pub fn job_exit(retcodes: &[i32], static_output: bool) -> (i32, Option<&'static str>) {
    if retcodes.is_empty() {
        return (NO_RETURN, Some("ERROR: No return received"));
    }
    if static_output {
        return (OK, None);
    }
    if retcodes.iter().any(|c| *c != 0) {
        return (
            GENERIC,
            Some("ERROR: Minions returned with non-zero exit code"),
        );
    }
    (OK, None)
}

/// Prints a usage error with a one-line hint and returns [`USAGE`].
pub fn usage(msg: &str) -> i32 {
    eprintln!("saltq: error: {msg}");
    eprintln!("Usage: saltq [OPTIONS] TARGET FUNCTION [ARGS]...  (saltq --help for more)");
    USAGE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_exit_codes() {
        let failed = Some("ERROR: Minions returned with non-zero exit code");
        assert_eq!(job_exit(&[0, 0], false), (OK, None));
        // A failed state run (retcode 2) and a state tree that did not compile (1).
        assert_eq!(job_exit(&[0, 2], false), (GENERIC, failed));
        assert_eq!(job_exit(&[1], false), (GENERIC, failed));
        assert_eq!(job_exit(&[2], true), (OK, None));
        assert_eq!(
            job_exit(&[], false),
            (NO_RETURN, Some("ERROR: No return received"))
        );
        assert_eq!(
            job_exit(&[], true),
            (NO_RETURN, Some("ERROR: No return received"))
        );
    }
}
