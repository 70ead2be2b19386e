//! Wheel functions (Salt's `salt/wheel/key.py`): key management run on the master by the
//! reactor (`wheel.key.accept`) and by orchestration (`salt.wheel`). Each change fires
//! `salt/key` as salt-key's do; a whole call is announced as Salt's `WheelClient` does,
//! `salt/wheel/<jid>/new` and `/ret`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use saltq_transport::pki;

use crate::certs;
use crate::keys::KeyState;
use crate::state::Master;

/// The wheel functions there are.
pub const FUNCTIONS: &[&str] = &[
    "key.list_all",
    "key.list",
    "key.name_match",
    "key.accept",
    "key.reject",
    "key.delete",
    "key.finger",
    "key.gen_accept",
    "config.values",
];

/// Salt's `key.list` match words for each key state (`salt/key.py`'s `list_status`).
fn list_status(word: &str) -> Result<Option<KeyState>, String> {
    match word {
        "pre" | "un" | "unaccepted" => Ok(Some(KeyState::Pending)),
        "acc" | "accepted" => Ok(Some(KeyState::Accepted)),
        "rej" | "rejected" => Ok(Some(KeyState::Rejected)),
        "den" | "denied" => Ok(Some(KeyState::Denied)),
        "all" => Ok(None),
        other => Err(format!(
            "unknown key status {other:?}: expected pre, un, unaccepted, acc, accepted, rej, \
             rejected, den, denied or all"
        )),
    }
}

/// The master's settings a salt-api or wheel caller may read (Salt's `config.values` answers
/// the whole master config; secrets and file contents are not part of this one).
fn config_values(master: &Master) -> Value {
    let c = &master.cfg;
    json!({
        "id": c.id,
        "cachedir": c.cachedir,
        "pki_dir": c.pki_dir,
        "auto_accept": c.auto_accept,
        "timeout": c.timeout.as_secs_f64(),
        "gather_job_timeout": c.gather_job_timeout.as_secs_f64(),
        "keep_jobs_seconds": c.keep_jobs.as_secs(),
        "presence_events": c.presence_events,
        "hash_type": c.hash_type,
        "file_roots": {"base": c.file_roots},
        "pillar_roots": {"base": c.pillar_roots},
        "netapi_enable_clients": c.netapi.as_ref().map(|n| n.enable_clients.clone()).unwrap_or_default(),
        "token_expire": c.netapi.as_ref().map(|n| n.token_expire.as_secs_f64()),
    })
}

/// A key pair made on the master for a minion (`key.gen_accept`): what that minion's
/// `pki_dir` needs so it is accepted at its first connection.
#[derive(Debug, Clone)]
pub struct MadeKey {
    /// The public key, as kept in `pki_dir/minions/<id>` (Salt's `pub`).
    pub public: String,
    /// The private key, the minion's `minion.key` (Salt's `priv`).
    pub private: String,
    /// The certificate the master's CA issued for it, the minion's `minion.crt`.
    pub cert: String,
    /// The root of the master's server chain, the minion's pinned `master_ca.crt` (empty
    /// when the master serves no CA in its chain: the minion then trusts on first use).
    pub master_ca: String,
}

impl MadeKey {
    /// Salt's `{pub, priv}` with saltq's `cert` and `master_ca` beside them.
    fn to_value(&self) -> Value {
        json!({"pub": self.public, "priv": self.private, "cert": self.cert,
               "master_ca": self.master_ca})
    }
}

/// Makes `id` a key pair and a certificate from the master's CA, valid for
/// `minion_cert_days`, and accepts the key; `None` when `id` already has an accepted key and
/// not `force` (Salt answers `{}` then). Salt's `keysize` does not apply: saltq's keys are
/// ECDSA P-256, as every minion makes its own.
pub fn gen_accept(master: &Master, id: &str, force: bool) -> Result<Option<MadeKey>, String> {
    let live = master
        .certs
        .as_ref()
        .ok_or_else(|| "the master's certificates are not loaded yet".to_owned())?;
    if !force && master.keys.accepted().iter().any(|a| a == id) {
        return Ok(None);
    }
    // A fresh key pair; its throwaway self-signed certificate only carries the public key.
    let (own, private) = pki::self_signed_minion(id, None).map_err(|e| e.to_string())?;
    let own = pki::certs_from_pem(own.as_bytes(), std::path::Path::new("the new key"))
        .map_err(|e| e.to_string())?;
    let public = pki::public_key_pem(&own[0]).map_err(|e| e.to_string())?;
    let public_key_der =
        pki::spki_from_pem(&public).ok_or_else(|| "cannot read the new public key".to_owned())?;
    let validity = certs::issued_validity(certs::unix_now(), master.cfg.minion_cert_lifetime);
    let cert = live
        .authority()
        .certify(&pki::CertifyRequest {
            common_name: id.to_owned(),
            role: pki::CertRole::Minion,
            public_key_der,
            validity,
        })
        .map_err(|e| format!("cannot issue minion {id} a certificate: {e}"))?;
    let chain = live.server.chain();
    let master_ca = match chain.as_slice() {
        [_, .., root] => pki::cert_to_pem(root),
        _ => String::new(),
    };
    if !master
        .keys
        .put_accepted(id, &public, force)
        .map_err(|e| e.to_string())?
    {
        return Ok(None);
    }
    tracing::info!(minion = %id, "made and accepted a key for minion {id} (key.gen_accept)");
    Ok(Some(MadeKey {
        public,
        private,
        cert,
        master_ca,
    }))
}

/// Keys by Salt's directory name (`minions`, `minions_pre`, ...), each list sorted.
fn by_dir(keys: impl IntoIterator<Item = (KeyState, String)>) -> Value {
    let mut out: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (state, id) in keys {
        out.entry(state.dir()).or_default().push(id);
    }
    for ids in out.values_mut() {
        ids.sort();
    }
    json!(out)
}

/// The keys whose id matches `glob`, by directory (Salt's `name_match`).
fn name_match(master: &Master, glob: &str) -> Value {
    by_dir(
        master
            .keys
            .all()
            .into_iter()
            .filter(|(_, id, _)| saltq_semantics::python::fnmatch(id, glob))
            .map(|(s, id, _)| (s, id)),
    )
}

/// The `match` argument: keyword or first positional.
fn match_arg(args: &[Value], kwargs: &Map<String, Value>) -> Result<String, String> {
    kwargs
        .get("match")
        .or_else(|| args.first())
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "missing 1 required positional argument: 'match'".to_owned())
}

fn flag(kwargs: &Map<String, Value>, key: &str) -> bool {
    kwargs.get(key).is_some_and(saltq_semantics::python::truthy)
}

/// Calls the wheel function `fun`; the error is what Salt's wheel client would report.
pub fn call(
    master: &Master,
    fun: &str,
    args: &[Value],
    kwargs: &Map<String, Value>,
) -> Result<Value, String> {
    let announce = |act: &str, changed: &[(KeyState, String)]| {
        for (_, id) in changed {
            master
                .events
                .fire("salt/key", json!({"act": act, "id": id, "result": true}));
        }
    };
    match fun {
        "key.list_all" => {
            // Salt lists the master's own key files under `local`; saltq's master has no
            // RSA key pair, its identity is the certificate in pki_dir.
            let mut all = by_dir(master.keys.all().into_iter().map(|(s, id, _)| (s, id)));
            if let Value::Object(m) = &mut all {
                for state in KeyState::ALL {
                    m.entry(state.dir()).or_insert_with(|| json!([]));
                }
                m.insert("local".into(), json!([]));
            }
            Ok(all)
        }
        "key.name_match" => Ok(name_match(master, &match_arg(args, kwargs)?)),
        "key.list" => {
            let want = list_status(&match_arg(args, kwargs)?)?;
            let mut out = by_dir(
                master
                    .keys
                    .all()
                    .into_iter()
                    .filter(|(s, _, _)| want.is_none_or(|w| w == *s))
                    .map(|(s, id, _)| (s, id)),
            );
            if let (Value::Object(m), Some(w)) = (&mut out, want) {
                m.entry(w.dir()).or_insert_with(|| json!([]));
            }
            Ok(out)
        }
        "key.finger" => {
            let m = match_arg(args, kwargs)?;
            let out: BTreeMap<&str, BTreeMap<String, String>> = master
                .keys
                .fingerprints(&m)
                .into_iter()
                .map(|(s, fps)| (s.dir(), fps))
                .collect();
            Ok(json!(out))
        }
        "config.values" => Ok(config_values(master)),
        "key.gen_accept" => {
            let id = kwargs
                .get("id_")
                .or_else(|| args.first())
                .and_then(Value::as_str)
                .ok_or_else(|| "missing 1 required positional argument: 'id_'".to_owned())?;
            let made = gen_accept(master, id, flag(kwargs, "force"))?;
            if made.is_some() {
                announce("accept", &[(KeyState::Accepted, id.to_owned())]);
            }
            Ok(made.map(|m| m.to_value()).unwrap_or_else(|| json!({})))
        }
        "key.accept" => {
            let m = match_arg(args, kwargs)?;
            let mut from = vec![KeyState::Pending];
            if flag(kwargs, "include_rejected") {
                from.push(KeyState::Rejected);
            }
            if flag(kwargs, "include_denied") {
                from.push(KeyState::Denied);
            }
            let moved = master
                .keys
                .transition(&m, &from, KeyState::Accepted)
                .map_err(|e| e.to_string())?;
            announce("accept", &moved);
            Ok(name_match(master, &m))
        }
        "key.reject" => {
            let m = match_arg(args, kwargs)?;
            let mut from = vec![KeyState::Pending];
            if flag(kwargs, "include_accepted") {
                from.push(KeyState::Accepted);
            }
            if flag(kwargs, "include_denied") {
                from.push(KeyState::Denied);
            }
            let moved = master
                .keys
                .transition(&m, &from, KeyState::Rejected)
                .map_err(|e| e.to_string())?;
            announce("reject", &moved);
            Ok(name_match(master, &m))
        }
        "key.delete" => {
            let m = match_arg(args, kwargs)?;
            let gone = master.keys.delete(&m).map_err(|e| e.to_string())?;
            announce("delete", &gone);
            Ok(json!({}))
        }
        other => Err(format!(
            "'{other}' is not available: the wheel functions are {}",
            FUNCTIONS.join(", ")
        )),
    }
}

/// Runs `fun` as Salt's `WheelClient.cmd(..., full_return=True)`: announced under its own
/// jid, answered as `{fun, jid, user, fun_args, return, success}`.
pub async fn execute(
    master: &Master,
    user: &str,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Result<Value, String> {
    let jid = master
        .next_jid("")
        .await
        .map_err(|s| s.message().to_owned())?
        .to_string();
    Ok(execute_as(master, user, &jid, fun, args, kwargs))
}

/// [`execute`] under a jid the caller already has (salt-api's `wheel_async` answers it first).
pub fn execute_as(
    master: &Master,
    user: &str,
    jid: &str,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Value {
    let mut fun_args = args.clone();
    if !kwargs.is_empty() {
        fun_args.push(Value::Object(kwargs.clone()));
    }
    let wfun = format!("wheel.{fun}");
    master.events.fire(
        format!("salt/wheel/{jid}/new"),
        json!({"fun": wfun, "fun_args": fun_args, "jid": jid, "user": user}),
    );
    let (ret, success) = match call(master, fun, &args, &kwargs) {
        Ok(v) => (v, true),
        Err(e) => (
            json!(format!("Exception occurred in wheel {fun}: {e}")),
            false,
        ),
    };
    let data = json!({"fun": wfun, "fun_args": fun_args, "jid": jid, "return": ret,
                      "success": success, "user": user});
    master
        .events
        .fire(format!("salt/wheel/{jid}/ret"), data.clone());
    data
}
