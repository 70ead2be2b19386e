//! Salt's `shadow` module on Linux (`linux_shadow`): password hashes and ageing fields read
//! from the shadow database (`/etc/shadow`, or under `root`), changed with `chpasswd -e`,
//! `usermod -p`, `passwd` and `chage`, which lock the files as the shadow tools do (Salt
//! rewrites `/etc/shadow` itself; the result is the same entry). `gen_password` makes
//! SHA-crypt hashes (`$5$`, `$6$`) as glibc's `crypt` does.

use std::path::Path;

use serde_json::{Value, json};

use saltq_semantics::python::{self, is_true};

use crate::error::ExecError;
use crate::modules::{run_cmd, run_cmd_stdin};

use crate::spec::{Call, Function, Lit, Param};

const ROOT: Param = Param::opt("root", Lit::None);

/// The `shadow` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("shadow.default_hash", handler!(default_hash)).doc(DEFAULT_HASH_DOC),
    Function::new("shadow.info", handler!(info))
        .params(&[Param::req("name"), ROOT])
        .doc(INFO_DOC),
    Function::new("shadow.list_users", handler!(list_users))
        .params(&[ROOT])
        .doc(LIST_USERS_DOC),
    Function::new("shadow.gen_password", handler!(gen_password))
        .params(&[
            Param::req("password"),
            Param::opt("crypt_salt", Lit::None),
            Param::opt("algorithm", Lit::Str("sha512")),
        ])
        .doc(GEN_PASSWORD_DOC),
    Function::new("shadow.set_password", handler!(set_password))
        .params(&[
            Param::req("name"),
            Param::req("password"),
            Param::opt("use_usermod", Lit::Bool(false)),
            ROOT,
        ])
        .doc(SET_PASSWORD_DOC),
    Function::new("shadow.del_password", handler!(del_password))
        .params(&[Param::req("name"), ROOT])
        .doc(DEL_PASSWORD_DOC),
    Function::new("shadow.lock_password", handler!(lock_password))
        .params(&[Param::req("name"), ROOT])
        .doc(LOCK_PASSWORD_DOC),
    Function::new("shadow.unlock_password", handler!(unlock_password))
        .params(&[Param::req("name"), ROOT])
        .doc(UNLOCK_PASSWORD_DOC),
    Function::new("shadow.set_mindays", handler!(set_mindays))
        .params(&[Param::req("name"), Param::req("mindays"), ROOT])
        .doc(SET_MINDAYS_DOC),
    Function::new("shadow.set_maxdays", handler!(set_maxdays))
        .params(&[Param::req("name"), Param::req("maxdays"), ROOT])
        .doc(SET_MAXDAYS_DOC),
    Function::new("shadow.set_inactdays", handler!(set_inactdays))
        .params(&[Param::req("name"), Param::req("inactdays"), ROOT])
        .doc(SET_INACTDAYS_DOC),
    Function::new("shadow.set_warndays", handler!(set_warndays))
        .params(&[Param::req("name"), Param::req("warndays"), ROOT])
        .doc(SET_WARNDAYS_DOC),
    Function::new("shadow.set_date", handler!(set_date))
        .params(&[Param::req("name"), Param::req("date"), ROOT])
        .doc(SET_DATE_DOC),
    Function::new("shadow.set_expire", handler!(set_expire))
        .params(&[Param::req("name"), Param::req("expire"), ROOT])
        .doc(SET_EXPIRE_DOC),
];

/// The keys of a shadow entry, in Salt's order after `name` and `passwd`.
const NUMERIC: [&str; 6] = ["lstchg", "min", "max", "warn", "inact", "expire"];

/// One shadow line as Salt's `shadow.info` dict: empty numeric fields are -1, as `spwd`
/// gives them.
pub(crate) fn parse_entry(line: &str) -> Option<Value> {
    let comps: Vec<&str> = line.trim().split(':').collect();
    if comps.len() < 9 {
        return None;
    }
    let mut m = serde_json::Map::new();
    m.insert("name".into(), json!(comps[0]));
    m.insert("passwd".into(), json!(comps[1]));
    for (key, text) in NUMERIC.iter().zip(&comps[2..8]) {
        let n: i64 = if text.is_empty() {
            -1
        } else {
            text.parse().ok()?
        };
        m.insert((*key).into(), json!(n));
    }
    Some(Value::Object(m))
}

/// What `shadow.info` answers for a user the database lacks.
fn missing() -> Value {
    json!({"name": "", "passwd": "", "lstchg": "", "min": "", "max": "", "warn": "",
           "inact": "", "expire": ""})
}

/// The shadow entries of `<root>/etc/shadow` (or `/etc/shadow`).
fn entries(root: Option<&str>) -> Vec<Value> {
    let path = Path::new(root.unwrap_or("/")).join("etc/shadow");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(parse_entry)
        .collect()
}

/// `shadow.info` for `name` under `root`.
pub(crate) fn shadow_info(root: Option<&str>, name: &str) -> Value {
    entries(root)
        .into_iter()
        .find(|e| e["name"] == json!(name))
        .unwrap_or_else(missing)
}

fn root_of(call: &Call) -> Option<String> {
    call.opt_arg("root").map(python::str)
}

/// The alphabet of crypt salts.
const SALT_CHARS: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A SHA-crypt hash of `password` (`$6$salt$...` for sha512, `$5$salt$...` for sha256), with
/// a random 16-character salt when none is given; the salt stops at `$` and 16 characters.
pub(crate) fn crypt_hash(
    password: &str,
    salt: Option<&str>,
    algorithm: &str,
) -> Result<String, ExecError> {
    let salt: String = match salt {
        Some(s) => s.split('$').next().unwrap_or("").chars().take(16).collect(),
        None => (0..16)
            .map(|_| SALT_CHARS[rand::random_range(0..SALT_CHARS.len())] as char)
            .collect(),
    };
    let (ident, hash) = match algorithm {
        "sha512" => (
            "6",
            sha_crypt::sha512_crypt_b64(
                password.as_bytes(),
                salt.as_bytes(),
                &sha_crypt::Sha512Params::default(),
            ),
        ),
        "sha256" => (
            "5",
            sha_crypt::sha256_crypt_b64(
                password.as_bytes(),
                salt.as_bytes(),
                &sha_crypt::Sha256Params::default(),
            ),
        ),
        other => {
            return Err(ExecError::invocation(format!(
                "Cannot hash using '{other}' hash algorithm. Natively supported algorithms are: \
                 ['sha512', 'sha256']."
            )));
        }
    };
    let hash = hash.map_err(|e| ExecError::execution(format!("crypt failed: {e:?}")))?;
    Ok(format!("${ident}${salt}${hash}"))
}

const DEFAULT_HASH_DOC: &str = "Return the hash an account without a password has: ``!``

CLI Example:

.. code-block:: bash

    salt '*' shadow.default_hash
";

async fn default_hash(_call: Call) -> Result<Value, ExecError> {
    Ok(json!("!"))
}

const INFO_DOC: &str = "Return a user's shadow entry: ``{name, passwd, lstchg, min, max, warn,
inact, expire}`` (empty strings when there is no such user)

CLI Example:

.. code-block:: bash

    salt '*' shadow.info root
";

async fn info(call: Call) -> Result<Value, ExecError> {
    Ok(shadow_info(
        root_of(&call).as_deref(),
        &python::str(call.arg("name")),
    ))
}

const LIST_USERS_DOC: &str = "Return the names of every user in the shadow database, sorted

CLI Example:

.. code-block:: bash

    salt '*' shadow.list_users
";

async fn list_users(call: Call) -> Result<Value, ExecError> {
    let mut names: Vec<String> = entries(root_of(&call).as_deref())
        .iter()
        .map(|e| python::str(&e["name"]))
        .collect();
    names.sort();
    Ok(json!(names))
}

const GEN_PASSWORD_DOC: &str = "Return a password hash for ``/etc/shadow``: ``algorithm`` sha512
(the default) or sha256, with ``crypt_salt`` or a random salt

CLI Example:

.. code-block:: bash

    salt '*' shadow.gen_password 'I_am_password'
    salt '*' shadow.gen_password 'I_am_password' crypt_salt='I_am_salt' algorithm=sha256
";

async fn gen_password(call: Call) -> Result<Value, ExecError> {
    let salt = call.opt_arg("crypt_salt").map(python::str);
    let algorithm = python::str(call.arg("algorithm"));
    Ok(json!(crypt_hash(
        &python::str(call.arg("password")),
        salt.as_deref(),
        &algorithm
    )?))
}

const SET_PASSWORD_DOC: &str = "Set a user's password to a hash (as ``gen_password`` makes):
``True`` when the shadow entry has it afterwards, ``False`` for a missing user

CLI Example:

.. code-block:: bash

    salt '*' shadow.set_password root '$1$UYCIxa628.9qXjpQCjM4a..'
";

async fn set_password(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let password = python::str(call.arg("password"));
    let root = root_of(&call);
    if run_cmd(&call, &["id", &name]).await?.code != 0 {
        return Ok(Value::Bool(false));
    }
    let shadow = Path::new(root.as_deref().unwrap_or("/")).join("etc/shadow");
    if !shadow.is_file() {
        return Ok(json!({}));
    }
    if is_true(call.arg("use_usermod")) {
        let mut argv: Vec<String> = vec!["usermod".into()];
        if let Some(root) = &root {
            argv.extend(["-R".into(), root.clone()]);
        }
        argv.extend(["-p".into(), password.clone(), name.clone()]);
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        run_cmd(&call, &refs).await?;
    } else {
        // `chpasswd -e` writes the hash and today's change date, as Salt's rewrite does.
        let mut argv: Vec<String> = vec!["chpasswd".into(), "-e".into()];
        if let Some(root) = &root {
            argv.extend(["-R".into(), root.clone()]);
        }
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        let line = format!("{name}:{password}\n");
        run_cmd_stdin(&call, &refs, Some(line.as_bytes())).await?;
    }
    Ok(Value::Bool(
        shadow_info(root.as_deref(), &name)["passwd"] == json!(password),
    ))
}

/// `passwd [-R root] FLAG name`.
async fn passwd_cmd(call: &Call, flag: &str, name: &str) -> Result<(), ExecError> {
    let mut argv: Vec<String> = vec!["passwd".into()];
    if let Some(root) = root_of(call) {
        argv.extend(["-R".into(), root]);
    }
    argv.extend([flag.into(), name.into()]);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    run_cmd(call, &refs).await?;
    Ok(())
}

const DEL_PASSWORD_DOC: &str = "Empty a user's password (``passwd -d``): ``True`` when it is empty
afterwards

CLI Example:

.. code-block:: bash

    salt '*' shadow.del_password username
";

async fn del_password(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    passwd_cmd(&call, "-d", &name).await?;
    let after = shadow_info(root_of(&call).as_deref(), &name);
    Ok(Value::Bool(
        after["passwd"] == json!("") && after["name"] == json!(name),
    ))
}

const LOCK_PASSWORD_DOC: &str = "Lock a user's password (``passwd -l``): ``True`` when it starts
with ``!`` afterwards

CLI Example:

.. code-block:: bash

    salt '*' shadow.lock_password username
";

async fn lock_password(call: Call) -> Result<Value, ExecError> {
    lock(call, true).await
}

const UNLOCK_PASSWORD_DOC: &str = "Unlock a user's password (``passwd -u``): ``True`` when it no
longer starts with ``!``

CLI Example:

.. code-block:: bash

    salt '*' shadow.unlock_password username
";

async fn unlock_password(call: Call) -> Result<Value, ExecError> {
    lock(call, false).await
}

async fn lock(call: Call, locked: bool) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let root = root_of(&call);
    let is_locked = |v: &Value| v["passwd"].as_str().is_some_and(|p| p.starts_with('!'));
    let before = shadow_info(root.as_deref(), &name);
    if before["name"] == json!("") {
        return Ok(Value::Bool(false));
    }
    if is_locked(&before) == locked {
        return Ok(Value::Bool(true));
    }
    passwd_cmd(&call, if locked { "-l" } else { "-u" }, &name).await?;
    Ok(Value::Bool(
        is_locked(&shadow_info(root.as_deref(), &name)) == locked,
    ))
}

/// Salt's `_set_attrib`: `chage PARAM VALUE name` unless the field has the value already;
/// with `validate`, whether it has it afterwards.
async fn set_attrib(
    call: &Call,
    arg: &str,
    key: &str,
    param: &str,
    validate: bool,
) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let value = call.arg(arg).clone();
    let root = root_of(call);
    let before = shadow_info(root.as_deref(), &name);
    if before["name"] == json!("") {
        return Ok(Value::Bool(false));
    }
    if before[key] == value {
        return Ok(Value::Bool(true));
    }
    let mut argv: Vec<String> = vec!["chage".into()];
    if let Some(root) = &root {
        argv.extend(["-R".into(), root.clone()]);
    }
    argv.extend([param.into(), python::str(&value), name.clone()]);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let ok = run_cmd(call, &refs).await?.code == 0;
    if validate {
        return Ok(Value::Bool(
            shadow_info(root.as_deref(), &name)[key] == value,
        ));
    }
    Ok(Value::Bool(ok))
}

const SET_MINDAYS_DOC: &str = "Set the minimum number of days between password changes
(``chage -m``)

CLI Example:

.. code-block:: bash

    salt '*' shadow.set_mindays username 7
";

async fn set_mindays(call: Call) -> Result<Value, ExecError> {
    set_attrib(&call, "mindays", "min", "-m", true).await
}

const SET_MAXDAYS_DOC: &str = "Set the maximum number of days a password is valid (``chage -M``)

CLI Example:

.. code-block:: bash

    salt '*' shadow.set_maxdays username 90
";

async fn set_maxdays(call: Call) -> Result<Value, ExecError> {
    set_attrib(&call, "maxdays", "max", "-M", true).await
}

const SET_INACTDAYS_DOC: &str = "Set the days after a password expired before the account is
locked (``chage -I``)

CLI Example:

.. code-block:: bash

    salt '*' shadow.set_inactdays username 7
";

async fn set_inactdays(call: Call) -> Result<Value, ExecError> {
    set_attrib(&call, "inactdays", "inact", "-I", true).await
}

const SET_WARNDAYS_DOC: &str = "Set the days of warning before a password change is required
(``chage -W``)

CLI Example:

.. code-block:: bash

    salt '*' shadow.set_warndays username 7
";

async fn set_warndays(call: Call) -> Result<Value, ExecError> {
    set_attrib(&call, "warndays", "warn", "-W", true).await
}

const SET_DATE_DOC: &str = "Set the date of the last password change, in days since the epoch
(``chage -d``)

CLI Example:

.. code-block:: bash

    salt '*' shadow.set_date username 0
";

async fn set_date(call: Call) -> Result<Value, ExecError> {
    set_attrib(&call, "date", "lstchg", "-d", false).await
}

const SET_EXPIRE_DOC: &str = "Set the date the account expires, in days since the epoch; -1
clears it (``chage -E``)

CLI Example:

.. code-block:: bash

    salt '*' shadow.set_expire username -1
";

async fn set_expire(call: Call) -> Result<Value, ExecError> {
    set_attrib(&call, "expire", "expire", "-E", false).await
}

#[cfg(test)]
mod tests;
