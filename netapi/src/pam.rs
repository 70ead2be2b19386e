//! eauth `pam`: a salt-api password checked by the system's PAM, as Salt's `salt/auth/pam.py`
//! does it: `pam_start(service, user)` with a conversation that answers every hidden prompt
//! with the password, then `pam_authenticate` and `pam_acct_mgmt`, both of which must succeed.
//!
//! libpam is loaded at run time (`libpam.so.0`, with `libloading`), so building saltq needs no
//! PAM headers and a master without libpam still starts: a `pam` login then fails with the
//! reason in the log and 401 to the client, as Salt's does without libpam.
//!
//! Like Salt 3007.8, which runs its PAM check in a child Python process, the check runs in a
//! child process: the master re-executes its own binary with [`HELPER_ARG`] (its `main`
//! hands that to [`helper_main`]) and writes the service, user and password to the child's
//! stdin, never its arguments or environment. That keeps what matters: PAM modules (which
//! may crash, leak, call non-reentrant libc functions or sleep seconds on a failure, as
//! `pam_faildelay` does) run outside the master's threads, several logins are checked at
//! once, and a hung module is killed after [`TIMEOUT`].
//!
//! This module is the only one in saltq with `unsafe` code: the calls into libpam and the
//! conversation callback libpam calls back.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

/// The hidden first argument that makes the master's binary run one PAM check and exit.
pub const HELPER_ARG: &str = "--saltq-pam-check";

/// How long one PAM check may take before the child is killed and the login refused.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Salt's default `auth.pam.service`.
pub const DEFAULT_SERVICE: &str = "login";

/// The library names tried, in order (Debian, Red Hat and most Linux: `libpam.so.0`).
const LIBRARIES: &[&str] = &["libpam.so.0", "libpam.so", "libpam.dylib"];

/// Exit codes of the helper.
const OK: i32 = 0;
const REFUSED: i32 = 1;
const NO_LIBPAM: i32 = 2;
const BAD_INPUT: i32 = 3;

// Linux-PAM's constants (security/_pam_types.h).
const PAM_SUCCESS: c_int = 0;
const PAM_BUF_ERR: c_int = 5;
const PAM_CONV_ERR: c_int = 19;
const PAM_PROMPT_ECHO_OFF: c_int = 1;
const PAM_MAX_NUM_MSG: c_int = 32;

#[repr(C)]
struct PamMessage {
    msg_style: c_int,
    msg: *const c_char,
}

#[repr(C)]
struct PamResponse {
    resp: *mut c_char,
    resp_retcode: c_int,
}

type ConvFn = unsafe extern "C" fn(
    c_int,
    *mut *const PamMessage,
    *mut *mut PamResponse,
    *mut c_void,
) -> c_int;

#[repr(C)]
struct PamConv {
    conv: Option<ConvFn>,
    appdata_ptr: *mut c_void,
}

type PamStart =
    unsafe extern "C" fn(*const c_char, *const c_char, *const PamConv, *mut *mut c_void) -> c_int;
type PamCall = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
type PamStrerror = unsafe extern "C" fn(*mut c_void, c_int) -> *const c_char;

/// The `pam` backend's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PamAuth {
    /// `auth.pam.service` (default `login`): the file in /etc/pam.d that says how to check.
    pub service: String,
}

impl PamAuth {
    /// Whether `password` is `user`'s for PAM. Every failure is logged with its reason; the
    /// client only learns that the login failed.
    pub async fn verify(&self, user: &str, password: &str) -> bool {
        match self.check(user, password).await {
            Ok(()) => true,
            Err(why) => {
                tracing::warn!("eauth pam: {user} not authenticated: {why}");
                false
            }
        }
    }

    async fn check(&self, user: &str, password: &str) -> Result<(), String> {
        if [&self.service, user, password]
            .iter()
            .any(|s| s.contains('\0'))
        {
            return Err("the service, user name or password holds a NUL byte".into());
        }
        let exe: PathBuf = std::env::current_exe()
            .map_err(|e| format!("cannot find the master's own binary to run the check: {e}"))?;
        let mut child = tokio::process::Command::new(&exe)
            .arg(HELPER_ARG)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {} {HELPER_ARG}: {e}", exe.display()))?;
        let mut input = Vec::new();
        for part in [self.service.as_str(), user, password] {
            input.extend_from_slice(part.as_bytes());
            input.push(0);
        }
        let mut stdin = child.stdin.take().ok_or("the check's stdin is not piped")?;
        stdin
            .write_all(&input)
            .await
            .map_err(|e| format!("cannot write to the check: {e}"))?;
        drop(stdin);
        let out = tokio::time::timeout(TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| format!("PAM did not answer within {} seconds", TIMEOUT.as_secs()))?
            .map_err(|e| format!("the check failed to run: {e}"))?;
        let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        match out.status.code() {
            Some(OK) => Ok(()),
            Some(NO_LIBPAM) => {
                tracing::error!("eauth pam is configured but unusable: {said}");
                Err(said)
            }
            Some(REFUSED | BAD_INPUT) => Err(said),
            _ => Err(format!("the check ended with {}: {said}", out.status)),
        }
    }
}

/// The child's side: reads `service\0user\0password\0` from stdin, runs PAM, and answers with
/// its exit code (0 authenticated, 1 refused, 2 no libpam, 3 bad input) and a reason on stderr.
pub fn helper_main() -> i32 {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().take(1 << 16).read_to_end(&mut input) {
        return say(BAD_INPUT, &format!("cannot read the request: {e}"));
    }
    let parts: Vec<&[u8]> = input.split(|b| *b == 0).collect();
    let [service, user, password, rest] = parts.as_slice() else {
        return say(
            BAD_INPUT,
            "expected service, user and password ended by NUL bytes",
        );
    };
    if !rest.is_empty() {
        return say(BAD_INPUT, "unexpected data after the password");
    }
    let cstr = |b: &[u8]| CString::new(b).expect("split on NUL bytes");
    let (service, user, password) = (cstr(service), cstr(user), cstr(password));
    match authenticate(LIBRARIES, &service, &user, &password) {
        Ok(()) => OK,
        Err(Failure::NoLibrary(why)) => say(NO_LIBPAM, &why),
        Err(Failure::Refused(why)) => say(REFUSED, &why),
    }
}

fn say(code: i32, why: &str) -> i32 {
    let _ = writeln!(std::io::stderr(), "{why}");
    code
}

/// Why a check failed.
#[derive(Debug)]
enum Failure {
    /// libpam or one of its functions could not be loaded.
    NoLibrary(String),
    /// PAM said no (or could not start): its message.
    Refused(String),
}

/// The conversation: answers each `PAM_PROMPT_ECHO_OFF` prompt with the password (the
/// `appdata_ptr`), and every other message with no text, as Salt's `my_conv` does.
///
/// # Safety
/// Called by libpam only, with `msg` pointing to `n` message pointers (Linux-PAM's layout),
/// `resp` to where the response array goes, and `appdata` the `CString` given to `pam_start`.
unsafe extern "C" fn converse(
    n: c_int,
    msg: *mut *const PamMessage,
    resp: *mut *mut PamResponse,
    appdata: *mut c_void,
) -> c_int {
    if !(1..=PAM_MAX_NUM_MSG).contains(&n) || msg.is_null() || resp.is_null() || appdata.is_null() {
        return PAM_CONV_ERR;
    }
    let n = n as usize;
    // SAFETY: libpam frees the response array and each `resp` string with free(), so both
    // come from libc's allocator: calloc zeroes the array, so every entry not set below is a
    // null `resp` with retcode 0, which is what "no answer" is.
    let out = unsafe { libc::calloc(n, std::mem::size_of::<PamResponse>()) } as *mut PamResponse;
    if out.is_null() {
        return PAM_BUF_ERR;
    }
    for i in 0..n {
        // SAFETY: `msg` holds `n` pointers (checked above that n is in PAM's range and msg is
        // not null); libpam keeps them valid for this call. A null entry is skipped.
        let m = unsafe { *msg.add(i) };
        // SAFETY: `m` is non-null and points to a pam_message libpam owns during this call.
        if m.is_null() || unsafe { (*m).msg_style } != PAM_PROMPT_ECHO_OFF {
            continue;
        }
        // SAFETY: `appdata` is the password `CString` `authenticate` passed to pam_start; it
        // outlives the PAM handle (pam_end is called before it is dropped). strdup copies it
        // with malloc, which libpam frees.
        let copy = unsafe { libc::strdup(appdata as *const c_char) };
        if copy.is_null() {
            // SAFETY: free what was allocated so far (strdup'd answers and the array), as
            // libpam will not take a response array from a failed conversation.
            unsafe { free_responses(out, i) };
            return PAM_BUF_ERR;
        }
        // SAFETY: `out` has room for `n` responses and `i < n`.
        unsafe { (*out.add(i)).resp = copy };
    }
    // SAFETY: `resp` is not null (checked above); libpam takes ownership of `out`.
    unsafe { *resp = out };
    PAM_SUCCESS
}

/// Frees the first `n` answers and the array of a conversation that failed.
///
/// # Safety
/// `out` comes from calloc with at least `n` entries, each `resp` null or from strdup.
unsafe fn free_responses(out: *mut PamResponse, n: usize) {
    for i in 0..n {
        // SAFETY: the caller promises `i < n` entries exist, `resp` null or malloc'd.
        unsafe { libc::free((*out.add(i)).resp as *mut c_void) };
    }
    // SAFETY: `out` is the calloc'd array.
    unsafe { libc::free(out as *mut c_void) };
}

/// The function `name` (NUL-terminated) of libpam.
///
/// # Safety
/// `T` must be the function's C prototype, and the pointer must not be called after `lib`
/// is dropped.
unsafe fn sym<T: Copy>(lib: &libloading::Library, name: &[u8]) -> Result<T, Failure> {
    // SAFETY: the caller promises `T` is the symbol's type.
    unsafe { lib.get::<T>(name) }.map(|s| *s).map_err(|e| {
        Failure::NoLibrary(format!(
            "libpam has no {}: {e}",
            String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name))
        ))
    })
}

/// Runs `pam_start`, `pam_authenticate`, `pam_acct_mgmt` and `pam_end` for `user`.
fn authenticate(
    libraries: &[&str],
    service: &CStr,
    user: &CStr,
    password: &CStr,
) -> Result<(), Failure> {
    let mut tried = Vec::new();
    // SAFETY: loading libpam runs its initialisers, which only set up the library itself; we
    // are a fresh single-threaded child process doing nothing else.
    let lib = libraries
        .iter()
        .find_map(|name| match unsafe { libloading::Library::new(name) } {
            Ok(l) => Some(l),
            Err(e) => {
                tried.push(format!("{name}: {e}"));
                None
            }
        });
    let Some(lib) = lib else {
        return Err(Failure::NoLibrary(format!(
            "cannot load libpam ({}): install the system's PAM library (Debian: libpam0g)",
            tried.join("; ")
        )));
    };
    // SAFETY: each type is the prototype security/pam_appl.h declares for that name; the
    // function pointers are used only while `lib` is alive (it is dropped at the end).
    let (start, auth, acct, end, strerror) = unsafe {
        (
            sym::<PamStart>(&lib, b"pam_start\0")?,
            sym::<PamCall>(&lib, b"pam_authenticate\0")?,
            sym::<PamCall>(&lib, b"pam_acct_mgmt\0")?,
            sym::<PamCall>(&lib, b"pam_end\0")?,
            sym::<PamStrerror>(&lib, b"pam_strerror\0")?,
        )
    };
    let conv = PamConv {
        conv: Some(converse),
        appdata_ptr: password.as_ptr() as *mut c_void,
    };
    let mut handle: *mut c_void = std::ptr::null_mut();
    // SAFETY: service and user are NUL-terminated and outlive the handle; `conv` and the
    // password it points to live until after pam_end below; `handle` is written by libpam.
    let rc = unsafe { start(service.as_ptr(), user.as_ptr(), &conv, &mut handle) };
    if rc != PAM_SUCCESS || handle.is_null() {
        if !handle.is_null() {
            // SAFETY: a handle pam_start returned, ended once.
            unsafe { end(handle, rc) };
        }
        return Err(Failure::Refused(format!(
            "pam_start({}) failed with code {rc}",
            service.to_string_lossy()
        )));
    }
    // SAFETY: `handle` is a live handle from pam_start; flags 0.
    let mut rc = unsafe { auth(handle, 0) };
    let mut step = "pam_authenticate";
    if rc == PAM_SUCCESS {
        // SAFETY: as above.
        rc = unsafe { acct(handle, 0) };
        step = "pam_acct_mgmt";
    }
    let why = if rc == PAM_SUCCESS {
        None
    } else {
        // SAFETY: pam_strerror returns a static string (or null) for a live handle.
        let text = unsafe { strerror(handle, rc) };
        Some(if text.is_null() {
            format!("{step}: code {rc}")
        } else {
            // SAFETY: a NUL-terminated static string from libpam.
            format!(
                "{step}: {}",
                unsafe { CStr::from_ptr(text) }.to_string_lossy()
            )
        })
    };
    // SAFETY: ends the handle once; nothing uses it afterwards.
    unsafe { end(handle, rc) };
    match why {
        None => Ok(()),
        Some(w) => Err(Failure::Refused(w)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conversation answers hidden prompts with a malloc'd copy of the password and
    /// leaves the others empty; out-of-range counts are refused.
    #[test]
    fn the_conversation_answers_hidden_prompts_only() {
        let pw = CString::new("s3cret").unwrap();
        let prompt = CString::new("Password: ").unwrap();
        let msgs = [
            PamMessage {
                msg_style: PAM_PROMPT_ECHO_OFF,
                msg: prompt.as_ptr(),
            },
            PamMessage {
                msg_style: 4, // PAM_TEXT_INFO
                msg: prompt.as_ptr(),
            },
        ];
        let mut ptrs: Vec<*const PamMessage> = msgs.iter().map(|m| m as *const _).collect();
        let mut resp: *mut PamResponse = std::ptr::null_mut();
        // SAFETY: the same layout libpam passes: two message pointers and the password.
        let rc = unsafe { converse(2, ptrs.as_mut_ptr(), &mut resp, pw.as_ptr() as *mut c_void) };
        assert_eq!(rc, PAM_SUCCESS);
        // SAFETY: `converse` set `resp` to a calloc'd array of two responses.
        unsafe {
            assert_eq!(CStr::from_ptr((*resp).resp), pw.as_c_str());
            assert!((*resp.add(1)).resp.is_null());
            free_responses(resp, 2);
        }
        // SAFETY: counts outside 1..=32 are refused before anything is read.
        let rc = unsafe { converse(0, ptrs.as_mut_ptr(), &mut resp, pw.as_ptr() as *mut c_void) };
        assert_eq!(rc, PAM_CONV_ERR);
    }

    /// Without libpam the check fails with the names tried and what to install.
    #[test]
    fn a_missing_libpam_is_named() {
        let c = |s: &str| CString::new(s).unwrap();
        let e = authenticate(
            &["libsaltq-no-such-pam.so.0"],
            &c("login"),
            &c("u"),
            &c("p"),
        );
        match e {
            Err(Failure::NoLibrary(why)) => {
                assert!(
                    why.starts_with("cannot load libpam (libsaltq-no-such-pam.so.0: "),
                    "{why}"
                );
                assert!(
                    why.ends_with("install the system's PAM library (Debian: libpam0g)"),
                    "{why}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
