//! Salt's `user` state module (`salt/states/user.py`): `user.present` (uid, gid, groups,
//! `optional_groups`, `remove_groups`, home and `createhome`, shell, the gecos fields,
//! password hashes with `hash_password`/`enforce_password`/`empty_password`/`password_lock`,
//! the shadow ageing fields, `allow_uid_change`/`allow_gid_change`, `system`, `unique`,
//! `usergroup`) and `user.absent` (`purge`, `force`), through the execution functions
//! `user.*`, `group.*`, `shadow.*` and `file.*`, with Salt's comments and changes.
//!
//! Linux only: the Windows, macOS and BSD branches of Salt's module (`win_*`, `loginclass`)
//! are accepted and ignored, as Salt ignores them on Linux.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python::{self, truthy};

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const fn none(name: &'static str) -> Param {
    Param::opt(name, Lit::None)
}

const PRESENT: &[Param] = &[
    Param::req("name"),
    none("uid"),
    none("gid"),
    none("usergroup"),
    none("groups"),
    none("optional_groups"),
    Param::opt("remove_groups", Lit::Bool(true)),
    none("home"),
    Param::opt("createhome", Lit::Bool(true)),
    none("password"),
    Param::opt("hash_password", Lit::Bool(false)),
    Param::opt("enforce_password", Lit::Bool(true)),
    Param::opt("empty_password", Lit::Bool(false)),
    none("shell"),
    Param::opt("unique", Lit::Bool(true)),
    Param::opt("system", Lit::Bool(false)),
    none("fullname"),
    none("roomnumber"),
    none("workphone"),
    none("homephone"),
    none("other"),
    none("loginclass"),
    none("date"),
    none("mindays"),
    none("maxdays"),
    none("inactdays"),
    none("warndays"),
    none("expire"),
    none("win_homedrive"),
    none("win_profile"),
    none("win_logonscript"),
    none("win_description"),
    Param::opt("nologinit", Lit::Bool(false)),
    Param::opt("allow_uid_change", Lit::Bool(false)),
    Param::opt("allow_gid_change", Lit::Bool(false)),
    none("password_lock"),
    Param::opt("local", Lit::Bool(false)),
];

const ABSENT: &[Param] = &[
    Param::req("name"),
    Param::opt("purge", Lit::Bool(false)),
    Param::opt("force", Lit::Bool(false)),
    Param::opt("local", Lit::Bool(false)),
];

/// The `user` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "user.present",
        params: PRESENT,
        kwargs: false,
        handler: state_handler!(present),
    },
    StateFunction {
        name: "user.absent",
        params: ABSENT,
        kwargs: false,
        handler: state_handler!(absent),
    },
];

/// The gecos fields, in the passwd entry's order.
const GECOS: [&str; 5] = ["fullname", "roomnumber", "workphone", "homephone", "other"];
/// The shadow ageing fields: the state's argument, `shadow.info`'s key, the setter.
const AGEING: [(&str, &str, &str); 4] = [
    ("mindays", "min", "shadow.set_mindays"),
    ("maxdays", "max", "shadow.set_maxdays"),
    ("inactdays", "inact", "shadow.set_inactdays"),
    ("warndays", "warn", "shadow.set_warndays"),
];

/// What the state asks for, after Salt's preprocessing (gecos fields as strings, the
/// password hashed, missing optional groups dropped).
#[derive(Debug, Clone, Default)]
pub struct Wanted {
    pub name: String,
    pub uid: Value,
    pub gid: Value,
    pub groups: Option<Vec<String>>,
    pub optional_groups: Option<Vec<String>>,
    pub remove_groups: bool,
    pub home: Value,
    pub createhome: bool,
    pub password: Value,
    pub enforce_password: bool,
    pub empty_password: bool,
    pub shell: Value,
    /// `fullname`, `roomnumber`, `workphone`, `homephone`, `other`.
    pub gecos: [Value; 5],
    pub date: Value,
    /// `mindays`, `maxdays`, `inactdays`, `warndays`.
    pub ageing: [Value; 4],
    pub expire: Value,
    pub password_lock: Value,
    pub allow_uid_change: bool,
    pub allow_gid_change: bool,
}

/// What the system says about the account and the groups involved.
pub struct Facts<'a> {
    /// `user.info`.
    pub user: &'a Value,
    /// `shadow.info`.
    pub shadow: &'a Value,
    /// `file.group_to_gid` (`""` for an unknown name).
    pub group_to_gid: &'a dyn Fn(&Value) -> Value,
    /// `file.gid_to_group`.
    pub gid_to_group: &'a dyn Fn(&Value) -> Value,
    /// Whether a home directory exists.
    pub is_dir: &'a dyn Fn(&str) -> bool,
}

/// Salt's `_changes` for an existing account: the changes in Salt's order, or the error
/// Salt raises for a uid/gid change that is not allowed.
pub fn plan(want: &Wanted, f: &Facts<'_>) -> Result<Vec<(String, Value)>, String> {
    let mut change: Vec<(String, Value)> = Vec::new();
    let mut push = |k: &str, v: Value| change.push((k.to_owned(), v));
    let mut lgroups: Vec<String> = f.user["groups"]
        .as_array()
        .map(|g| g.iter().map(python::str).collect())
        .unwrap_or_default();
    let mut wanted: Vec<String> = want
        .groups
        .iter()
        .flatten()
        .chain(want.optional_groups.iter().flatten())
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let gids: Vec<Value> = lgroups
        .iter()
        .map(|g| (f.group_to_gid)(&json!(g)))
        .collect();
    let original = lgroups.clone();
    let dupes = |gid: &Value| -> Vec<String> {
        if gids.iter().filter(|g| *g == gid).count() > 1 {
            original
                .iter()
                .zip(&gids)
                .filter(|(_, g)| *g == gid)
                .map(|(n, _)| n.clone())
                .collect()
        } else {
            Vec::new()
        }
    };
    let optional_empty = want.optional_groups.as_ref().is_none_or(Vec::is_empty);
    if !want.remove_groups || (want.groups.is_none() && optional_empty) {
        let all: BTreeSet<String> = wanted.iter().chain(&lgroups).cloned().collect();
        wanted = all.into_iter().collect();
    }
    if truthy(&want.uid) && f.user["uid"] != want.uid {
        push("uid", want.uid.clone());
    }
    if !want.gid.is_null()
        && f.user["gid"] != want.gid
        && f.user["gid"] != (f.group_to_gid)(&want.gid)
    {
        push("gid", want.gid.clone());
    }
    let default_grp = python::str(&(f.gid_to_group)(if want.gid.is_null() {
        &f.user["gid"]
    } else {
        &want.gid
    }));
    let old_default_grp = python::str(&(f.gid_to_group)(&f.user["gid"]));
    let remove = |list: &mut Vec<String>, g: &str| {
        if let Some(i) = list.iter().position(|x| x == g) {
            list.remove(i);
        }
    };
    let dup_of = |g: &str| -> Vec<String> {
        let d = dupes(&(f.group_to_gid)(&json!(g)));
        if d.iter().any(|x| x == g) {
            d
        } else {
            Vec::new()
        }
    };
    if lgroups.contains(&default_grp) || wanted.contains(&default_grp) {
        let d = dup_of(&default_grp);
        if d.is_empty() {
            remove(&mut lgroups, &default_grp);
            remove(&mut wanted, &default_grp);
        } else {
            for g in d {
                remove(&mut lgroups, &g);
                remove(&mut wanted, &g);
            }
        }
    }
    if old_default_grp != default_grp && lgroups.contains(&old_default_grp) {
        let d = dup_of(&old_default_grp);
        if d.is_empty() {
            remove(&mut lgroups, &old_default_grp);
        } else {
            for g in d {
                remove(&mut lgroups, &g);
            }
        }
    }
    if lgroups.contains(&want.name) && !wanted.contains(&want.name) {
        let d = dup_of(&want.name);
        if d.is_empty() {
            remove(&mut lgroups, &want.name);
        } else {
            for g in d {
                remove(&mut lgroups, &g);
            }
        }
    }
    if group_changes(&lgroups, &wanted, want.remove_groups, f.group_to_gid)
        && (!wanted.is_empty() || want.remove_groups)
    {
        push("groups", json!(wanted));
    }
    if truthy(&want.home) && f.user["home"] != want.home {
        push("home", want.home.clone());
    }
    if want.createhome {
        let newhome = if truthy(&want.home) {
            &want.home
        } else {
            &f.user["home"]
        };
        if let Some(h) = newhome.as_str()
            && !(f.is_dir)(h)
        {
            push("homeDoesNotExist", json!(h));
        }
    }
    if truthy(&want.shell) && f.user["shell"] != want.shell {
        push("shell", want.shell.clone());
    }
    let passwd = &f.shadow["passwd"];
    if truthy(&want.password)
        && !want.empty_password
        && (passwd == "!" || want.enforce_password)
        && passwd != &want.password
    {
        push("passwd", want.password.clone());
    }
    if want.empty_password && passwd != "" {
        push("empty_password", json!(true));
    }
    if !want.date.is_null() && f.shadow["lstchg"] != want.date {
        push("date", want.date.clone());
    }
    for ((arg, key, _), v) in AGEING.iter().zip(&want.ageing) {
        if !v.is_null() && &f.shadow[*key] != v {
            push(arg, v.clone());
        }
    }
    if truthy(&want.expire) && f.shadow["expire"] != want.expire {
        push("expire", want.expire.clone());
    }
    let locked = passwd.as_str().is_some_and(|p| p.starts_with('!'));
    if (truthy(&want.password_lock) && !locked) || (want.password_lock == json!(false) && locked) {
        push("password_lock", want.password_lock.clone());
    }
    for (field, v) in GECOS.iter().zip(&want.gecos) {
        if !v.is_null() && &f.user[*field] != v {
            push(field, v.clone());
        }
    }
    let mut errors = Vec::new();
    let has = |k: &str| change.iter().any(|(c, _)| c == k);
    if !want.allow_uid_change && has("uid") {
        errors.push(format!(
            "Changing uid ({} -> {}) not permitted, set allow_uid_change to True to force this change. Note that this will not change file ownership.",
            python::str(&f.user["uid"]),
            python::str(&want.uid)
        ));
    }
    if !want.allow_gid_change && has("gid") {
        errors.push(format!(
            "Changing gid ({} -> {}) not permitted, set allow_gid_change to True to force this change. Note that this will not change file ownership.",
            python::str(&f.user["gid"]),
            python::str(&want.gid)
        ));
    }
    if !errors.is_empty() {
        let lines: Vec<String> = errors.iter().map(|e| format!("- {e}")).collect();
        return Err(format!(
            "Encountered error checking for needed changes. Additional info follows:\n\n{}",
            lines.join("\n")
        ));
    }
    Ok(change)
}

/// Salt's `_group_changes`: whether the groups differ, groups sharing a gid counted as one.
fn group_changes(
    cur: &[String],
    wanted: &[String],
    remove: bool,
    group_to_gid: &dyn Fn(&Value) -> Value,
) -> bool {
    let cur: BTreeSet<&String> = cur.iter().collect();
    let want: BTreeSet<&String> = wanted.iter().collect();
    if cur == want || (!remove && want.is_subset(&cur)) {
        return false;
    }
    let diff: Vec<&String> = if remove {
        want.symmetric_difference(&cur).copied().collect()
    } else {
        want.difference(&cur).copied().collect()
    };
    let all: BTreeSet<&String> = cur.union(&want).copied().collect();
    let gid = |g: &String| group_to_gid(&json!(g));
    diff.iter().any(|d| {
        let g = gid(d);
        g == json!("") || !all.iter().any(|other| other != d && gid(other) == g)
    })
}

/// A list of names from an argument: a list, or one name.
fn names(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Null => None,
        Value::Array(items) => Some(items.iter().map(python::str).collect()),
        other => Some(vec![python::str(other)]),
    }
}

fn root_args(local: bool) -> Map<String, Value> {
    let mut m = Map::new();
    if local {
        m.insert("root".into(), json!("/"));
    }
    m
}

fn one(v: impl Into<Value>) -> Vec<Value> {
    vec![v.into()]
}

/// The system facts `plan` needs, read through the execution functions.
struct Looked {
    user: Value,
    shadow: Value,
    gids: Map<String, Value>,
    names: Map<String, Value>,
}

async fn look(
    call: &StateCall,
    name: &str,
    local: bool,
    groups: &[String],
    gid: &Value,
) -> Result<Looked, StateError> {
    let user = call.salt("user.info", one(name), root_args(local)).await?;
    let shadow = call.salt("shadow.info", one(name), Map::new()).await?;
    let mut gids = Map::new();
    let mut names = Map::new();
    let mut ask: Vec<Value> = groups.iter().map(|g| json!(g)).collect();
    ask.extend(user["groups"].as_array().into_iter().flatten().cloned());
    ask.push(json!(name));
    ask.push(gid.clone());
    for g in &ask {
        let key = python::repr(g);
        if !gids.contains_key(&key) {
            gids.insert(
                key,
                call.salt("file.group_to_gid", vec![g.clone()], Map::new())
                    .await?,
            );
        }
    }
    for g in [gid, &user["gid"]] {
        let key = python::repr(g);
        if !names.contains_key(&key) {
            names.insert(
                key,
                call.salt("file.gid_to_group", vec![g.clone()], Map::new())
                    .await?,
            );
        }
    }
    Ok(Looked {
        user,
        shadow,
        gids,
        names,
    })
}

/// `plan` over what was looked up.
fn plan_looked(want: &Wanted, l: &Looked) -> Result<Vec<(String, Value)>, String> {
    let to_gid = |g: &Value| l.gids.get(&python::repr(g)).cloned().unwrap_or(json!(""));
    let to_name = |g: &Value| l.names.get(&python::repr(g)).cloned().unwrap_or(g.clone());
    let is_dir = |p: &str| std::path::Path::new(p).is_dir();
    plan(
        want,
        &Facts {
            user: &l.user,
            shadow: &l.shadow,
            group_to_gid: &to_gid,
            gid_to_group: &to_name,
            is_dir: &is_dir,
        },
    )
}

fn exists(v: &Value) -> bool {
    v.as_object().is_some_and(|m| !m.is_empty())
}

/// `password` hashed as Salt's `hash_password` does: with the salt and algorithm of the
/// current hash when there is one.
async fn hash_password(
    call: &StateCall,
    name: &str,
    password: &Value,
) -> Result<Value, StateError> {
    let current = call.salt("shadow.info", one(name), Map::new()).await?;
    let passwd = python::str(&current["passwd"]);
    let parts: Vec<&str> = passwd.splitn(5, '$').collect();
    let mut kw = Map::new();
    if parts.len() == 4 {
        let algorithm = match parts[1] {
            "1" => json!("md5"),
            "2a" => json!("blowfish"),
            "5" => json!("sha256"),
            "6" => json!("sha512"),
            _ => json!("sha512"),
        };
        kw.insert("crypt_salt".into(), json!(parts[2]));
        kw.insert("algorithm".into(), algorithm);
    }
    call.salt("shadow.gen_password", vec![password.clone()], kw)
        .await
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let p = |k: &str| call.param(PRESENT, k);
    let local = truthy(&p("local"));
    let mut password = p("password");
    if truthy(&password) && truthy(&p("hash_password")) {
        password = hash_password(&call, &name, &password).await?;
    }
    let gecos: [Value; 5] = GECOS.map(|f| match p(f) {
        Value::Null => Value::Null,
        v => json!(python::str(&v)),
    });
    let mut ret = Ret::new(&name);
    ret.comment = format!("User {name} is present and up to date");
    for v in gecos.iter().take(3) {
        if let Some(s) = v.as_str().filter(|s| s.contains(',')) {
            ret.result = Some(false);
            ret.comment = format!("Unsupported char ',' in {s}");
            return Ok(ret);
        }
    }
    let mut groups = names(&p("groups"));
    if let Some(g) = groups.as_ref().filter(|g| !g.is_empty()) {
        let mut missing = Vec::new();
        for x in g {
            if !exists(&call.salt("group.info", one(x.as_str()), Map::new()).await?) {
                missing.push(x.clone());
            }
        }
        if !missing.is_empty() {
            ret.result = Some(false);
            ret.comment = format!(
                "The following group(s) are not present: {}",
                missing.join(",")
            );
            return Ok(ret);
        }
    }
    let mut present_opt = None;
    if let Some(opt) = names(&p("optional_groups")).filter(|o| !o.is_empty()) {
        let mut found = Vec::new();
        for x in opt {
            if exists(&call.salt("group.info", one(x.as_str()), Map::new()).await?) {
                found.push(x);
            }
        }
        present_opt = Some(found);
    }
    let gid = p("gid");
    let usergroup = p("usergroup");
    let changes_gid = if truthy(&usergroup)
        && call
            .salt("file.group_to_gid", one(name.as_str()), Map::new())
            .await?
            != json!("")
    {
        json!(name)
    } else {
        gid.clone()
    };
    let mut want = Wanted {
        name: name.clone(),
        uid: p("uid"),
        gid: changes_gid,
        groups: groups.clone(),
        optional_groups: present_opt.clone(),
        remove_groups: truthy(&p("remove_groups")),
        home: p("home"),
        createhome: truthy(&p("createhome")),
        password: password.clone(),
        enforce_password: truthy(&p("enforce_password")),
        empty_password: truthy(&p("empty_password")),
        shell: p("shell"),
        gecos,
        date: p("date"),
        ageing: AGEING.map(|(arg, _, _)| p(arg)),
        expire: p("expire"),
        password_lock: p("password_lock"),
        allow_uid_change: truthy(&p("allow_uid_change")),
        allow_gid_change: truthy(&p("allow_gid_change")),
    };
    let all_groups: Vec<String> = groups
        .iter()
        .flatten()
        .chain(present_opt.iter().flatten())
        .cloned()
        .collect();
    let looked = look(&call, &name, local, &all_groups, &want.gid).await?;
    if exists(&looked.user) {
        let changes = match plan_looked(&want, &looked) {
            Ok(c) => c,
            Err(e) => {
                ret.result = Some(false);
                ret.comment = e;
                return Ok(ret);
            }
        };
        if changes.is_empty() {
            return Ok(ret);
        }
        if call.test {
            ret.result = None;
            ret.comment = "The following user attributes are set to be changed:\n".into();
            for (k, v) in &changes {
                let shown = if k == "passwd" {
                    "XXX-REDACTED-XXX".to_owned()
                } else {
                    python::str(v)
                };
                ret.comment.push_str(&format!("{k}: {shown}\n"));
            }
            return Ok(ret);
        }
        apply(&call, &want, changes, &looked, &mut ret).await?;
        want.allow_uid_change = true;
        want.allow_gid_change = true;
        let again = look(&call, &name, local, &all_groups, &want.gid).await?;
        let left = plan_looked(&want, &again).map_err(StateError)?;
        if !left.is_empty() {
            let m: Map<String, Value> = left.into_iter().collect();
            ret.comment = format!(
                "These values could not be changed: {}",
                python::repr(&Value::Object(m))
            );
            ret.result = Some(false);
        }
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("User {name} set to be added");
        return Ok(ret);
    }
    if let Some(opt) = present_opt {
        match groups.as_mut().filter(|g| !g.is_empty()) {
            Some(g) => g.extend(opt),
            None => groups = Some(opt),
        }
    }
    create(&call, &name, groups, &password, &want, local, &mut ret).await?;
    Ok(ret)
}

/// Makes the changes `plan` found on an existing account, then reports what changed.
async fn apply(
    call: &StateCall,
    want: &Wanted,
    mut changes: Vec<(String, Value)>,
    before: &Looked,
    ret: &mut Ret,
) -> Result<(), StateError> {
    let name = want.name.as_str();
    let mut take = |k: &str| {
        changes
            .iter()
            .position(|(c, _)| c == k)
            .map(|i| changes.remove(i).1)
    };
    let pre = &before.user;
    let lshad = &before.shadow;
    if take("passwd").is_some() && !want.empty_password {
        call.salt(
            "shadow.set_password",
            vec![json!(name), want.password.clone()],
            Map::new(),
        )
        .await?;
    }
    if take("empty_password") == Some(json!(true)) {
        call.salt("shadow.del_password", one(name), Map::new())
            .await?;
    }
    if let Some(lock) = take("password_lock") {
        let fun = if truthy(&lock) {
            "shadow.lock_password"
        } else {
            "shadow.unlock_password"
        };
        call.salt(fun, one(name), Map::new()).await?;
    }
    if take("date").is_some() {
        call.salt(
            "shadow.set_date",
            vec![json!(name), want.date.clone()],
            Map::new(),
        )
        .await?;
    }
    let chhome = |home: Value| async move {
        let mut kw = Map::new();
        kw.insert("persist".into(), json!(false));
        call.salt("user.chhome", vec![json!(name), home], kw).await
    };
    let home = take("home");
    let missing_home = take("homeDoesNotExist");
    let mut home_changed = false;
    if let Some(h) = home
        && missing_home.is_none()
    {
        chhome(h).await?;
        home_changed = true;
    }
    if let Some(h) = missing_home {
        if !home_changed {
            chhome(h.clone()).await?;
        }
        let path = python::str(&h);
        if !std::path::Path::new(&path).is_dir() {
            call.salt(
                "file.mkdir",
                vec![h, pre["uid"].clone(), pre["gid"].clone(), json!("0755")],
                Map::new(),
            )
            .await?;
        }
    }
    for ((arg, _, fun), v) in AGEING.iter().zip(&want.ageing) {
        if take(arg).is_some() {
            call.salt(fun, vec![json!(name), v.clone()], Map::new())
                .await?;
        }
    }
    if take("expire").is_some() {
        call.salt(
            "shadow.set_expire",
            vec![json!(name), want.expire.clone()],
            Map::new(),
        )
        .await?;
    }
    let groups = take("groups");
    for (key, value) in std::mem::take(&mut changes) {
        let fun = format!("user.ch{key}");
        if saltq_exec::lookup(&fun).is_some() {
            call.salt(&fun, vec![json!(name), value], Map::new())
                .await?;
        }
    }
    if let Some(g) = groups {
        call.salt(
            "user.chgroups",
            vec![json!(name), g, json!(!want.remove_groups)],
            Map::new(),
        )
        .await?;
    }
    let post = call.salt("user.info", one(name), Map::new()).await?;
    for (k, v) in post.as_object().into_iter().flatten() {
        if &pre[k] != v {
            ret.changes.insert(k.clone(), v.clone());
        }
    }
    if lshad["passwd"] != want.password {
        let spost = call.salt("shadow.info", one(name), Map::new()).await?;
        for (k, v) in spost.as_object().into_iter().flatten() {
            if &lshad[k] != v {
                let shown = if k == "passwd" {
                    json!("XXX-REDACTED-XXX")
                } else {
                    v.clone()
                };
                ret.changes.insert(k.clone(), shown);
            }
        }
    }
    if !ret.changes.is_empty() {
        ret.comment = format!("Updated user {name}");
    }
    Ok(())
}

/// Adds the account, then sets its password and ageing fields as Salt does.
async fn create(
    call: &StateCall,
    name: &str,
    groups: Option<Vec<String>>,
    password: &Value,
    want: &Wanted,
    local: bool,
    ret: &mut Ret,
) -> Result<(), StateError> {
    let p = |k: &str| call.param(PRESENT, k);
    let mut kw = Map::new();
    kw.insert("uid".into(), p("uid"));
    kw.insert("gid".into(), p("gid"));
    kw.insert("groups".into(), json!(groups));
    kw.insert("home".into(), p("home"));
    kw.insert("shell".into(), p("shell"));
    kw.insert("unique".into(), p("unique"));
    kw.insert("system".into(), p("system"));
    for (f, v) in GECOS.iter().zip(&want.gecos) {
        kw.insert((*f).into(), v.clone());
    }
    kw.insert("createhome".into(), p("createhome"));
    kw.insert("nologinit".into(), p("nologinit"));
    kw.insert("loginclass".into(), p("loginclass"));
    kw.insert("local".into(), json!(local));
    kw.insert("usergroup".into(), p("usergroup"));
    let result = call.salt("user.add", one(name), kw).await?;
    if result != json!(true) {
        ret.result = Some(false);
        ret.comment = match result {
            Value::String(s) => s,
            _ => format!("Failed to create new user {name}"),
        };
        return Ok(());
    }
    ret.comment = format!("New user {name} created");
    if let Value::Object(m) = call.salt("user.info", one(name), root_args(local)).await? {
        ret.changes = m;
    }
    if !want.createhome {
        ret.changes.insert("home".into(), json!(""));
    }
    let shadow = || call.salt("shadow.info", one(name), Map::new());
    if truthy(password) && !want.empty_password {
        call.salt(
            "shadow.set_password",
            vec![json!(name), password.clone()],
            Map::new(),
        )
        .await?;
        if &shadow().await?["passwd"] != password {
            ret.comment =
                format!("User {name} created but failed to set password to XXX-REDACTED-XXX");
            ret.result = Some(false);
        }
        ret.changes
            .insert("password".into(), json!("XXX-REDACTED-XXX"));
    }
    if want.empty_password && !truthy(password) {
        call.salt("shadow.del_password", one(name), Map::new())
            .await?;
        if shadow().await?["passwd"] != "" {
            ret.comment = format!("User {name} created but failed to empty password");
            ret.result = Some(false);
        }
        ret.changes.insert("password".into(), json!(""));
    }
    if !want.date.is_null() {
        call.salt(
            "shadow.set_date",
            vec![json!(name), want.date.clone()],
            Map::new(),
        )
        .await?;
        if shadow().await?["lstchg"] != want.date {
            ret.comment = format!(
                "User {name} created but failed to set last change date to {}",
                python::str(&want.date)
            );
            ret.result = Some(false);
        }
        ret.changes.insert("date".into(), want.date.clone());
    }
    let words = ["minimum days", "maximum days", "inactive days", "warn days"];
    for (((arg, key, fun), v), what) in AGEING.iter().zip(&want.ageing).zip(words) {
        if !truthy(v) {
            continue;
        }
        call.salt(fun, vec![json!(name), v.clone()], Map::new())
            .await?;
        if &shadow().await?[*key] != v {
            ret.comment = if *arg == "warndays" {
                format!(
                    "User {name} created but failed to set warn days to {}",
                    python::str(v)
                )
            } else {
                format!(
                    "User {name} created but failed to set {what} to {}",
                    python::str(v)
                )
            };
            ret.result = Some(false);
        }
        ret.changes.insert((*arg).into(), v.clone());
    }
    if truthy(&want.expire) {
        call.salt(
            "shadow.set_expire",
            vec![json!(name), want.expire.clone()],
            Map::new(),
        )
        .await?;
        if shadow().await?["expire"] != want.expire {
            ret.comment = format!(
                "User {name} created but failed to set expire days to {}",
                python::str(&want.expire)
            );
            ret.result = Some(false);
        }
        ret.changes.insert("expire".into(), want.expire.clone());
    }
    Ok(())
}

async fn absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let p = |k: &str| call.param(ABSENT, k);
    let local = truthy(&p("local"));
    let mut ret = Ret::new(&name);
    let info = call
        .salt("user.info", one(name.as_str()), root_args(local))
        .await?;
    if !exists(&info) {
        ret.comment = format!("User {name} is not present");
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("User {name} set for removal");
        return Ok(ret);
    }
    let before: Vec<String> = info["groups"]
        .as_array()
        .map(|g| g.iter().map(python::str).collect())
        .unwrap_or_default();
    let mut kw = Map::new();
    kw.insert("local".into(), json!(local));
    let removed = call
        .salt("user.delete", vec![json!(name), p("purge"), p("force")], kw)
        .await?;
    if !truthy(&removed) {
        ret.result = Some(false);
        ret.comment = format!("Failed to remove user {name}");
        return Ok(ret);
    }
    for g in before {
        if !exists(&call.salt("group.info", one(g.as_str()), Map::new()).await?) {
            ret.changes.insert(format!("{g} group"), json!("removed"));
        }
    }
    ret.changes.insert(name.clone(), json!("removed"));
    ret.comment = format!("Removed user {name}");
    Ok(ret)
}

#[cfg(test)]
mod tests;
