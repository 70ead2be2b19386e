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

/// Prints a usage error with a one-line hint and returns [`USAGE`].
pub fn usage(msg: &str) -> i32 {
    eprintln!("saltq: error: {msg}");
    eprintln!("Usage: saltq [OPTIONS] TARGET FUNCTION [ARGS]...  (saltq --help for more)");
    USAGE
}
