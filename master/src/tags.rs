//! Who may fire which event tag, without I/O: a minion (`MinionService.SendEvent`) and a client
//! (`EventService.FireEvent`, the `event.send` runner), checked against one table of the master's
//! namespaces.
//!
//! Salt lets a minion fire any tag, and anyone with the `event.send` runner too; saltq does not
//! let one speak for the master or for another minion, since a reactor keyed on those tags would
//! believe it. A tag is read as the rules see it before any rule applies: each segment without
//! surrounding whitespace, empty and `.` segments dropped, namespace names compared in lower case
//! (`Salt//Auth ` is `salt/auth`). A tag holding a control character or a `..` segment is refused
//! outright: `..` would let a tag a reactor glob reads under `salt/job/` escape the rule that
//! reads it elsewhere. An accepted tag is fired as given (Salt's inotify beacon fires
//! `salt/beacon/<id>/inotify//etc/x`), so every tag a reactor glob can match literally under a
//! namespace was read under that namespace too.
//!
//! - A minion may not fire under the master's namespaces nor under another minion's
//!   (`salt/minion/<other>/`, `salt/beacon/<other>/`); its own and every other tag are fired.
//! - A client other than the master's `admin` may fire under `salt/netapi/hook/` (what Salt's
//!   salt-api `/hook` lets any authenticated user fire), and any tag outside the table when it may
//!   run the `event.send` runner; never one in the table.

/// Who fires the tags of a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// The master alone.
    Master,
    /// The minion the segment after the namespace names (`salt/minion/<id>/...`).
    Minion,
    /// Any minion, about itself: the master stamps the sender's id into the data.
    AnyMinion,
}

/// The master's namespaces: a tag's first segments (lower case) and who fires them. Salt's own
/// (`TAGS` in `salt/utils/event.py`) and saltq's (`salt/cluster/`, `salt/presence/`,
/// `salt/reactor/`), and the legacy `minion_start` the master fires when a minion connects.
const NAMESPACES: &[(&[&str], Owner)] = &[
    (&["salt", "auth"], Owner::Master),
    (&["salt", "key"], Owner::Master),
    (&["salt", "job"], Owner::Master),
    (&["salt", "run"], Owner::Master),
    (&["salt", "wheel"], Owner::Master),
    (&["salt", "cluster"], Owner::Master),
    (&["salt", "presence"], Owner::Master),
    (&["salt", "reactor"], Owner::Master),
    (&["salt", "netapi"], Owner::Master),
    (&["salt", "syndic"], Owner::Master),
    (&["salt", "cloud"], Owner::Master),
    (&["salt", "fileserver"], Owner::Master),
    (&["salt", "queue"], Owner::Master),
    (&["salt", "stats"], Owner::Master),
    (&["salt", "minion"], Owner::Minion),
    (&["salt", "beacon"], Owner::Minion),
    (&["minion_start"], Owner::AnyMinion),
];

/// What salt-api's `/hook` fires under, and what every client may fire.
pub const HOOK_PREFIX: &[&str] = &["salt", "netapi", "hook"];

/// A tag's segments as the rules read them; refuses control characters, `..` segments and a tag
/// with no segment.
fn segments(tag: &str) -> Result<Vec<&str>, String> {
    if let Some(c) = tag.chars().find(|c| c.is_control()) {
        return Err(format!(
            "event tags may not hold control characters ({c:?})"
        ));
    }
    let mut out = Vec::new();
    for s in tag.split('/').map(str::trim) {
        match s {
            "" | "." => {}
            ".." => return Err("event tags may not have a \"..\" segment".into()),
            s => out.push(s),
        }
    }
    if out.is_empty() {
        return Err("event tag has no segment".into());
    }
    Ok(out)
}

/// Whether `segs` start with `prefix`, names compared in lower case.
fn under(segs: &[&str], prefix: &[&str]) -> bool {
    segs.len() >= prefix.len() && segs.iter().zip(prefix).all(|(s, p)| s.to_lowercase() == *p)
}

/// The namespace a tag is under: its name as messages show it, its owner, and for
/// [`Owner::Minion`] the minion the tag names.
fn namespace<'a>(segs: &[&'a str]) -> Option<(String, Owner, Option<&'a str>)> {
    let (ns, owner) = NAMESPACES.iter().find(|(ns, _)| under(segs, ns))?;
    let name = match ns {
        [one] => (*one).to_owned(),
        _ => format!("{}/", ns.join("/")),
    };
    Some((name, *owner, segs.get(ns.len()).copied()))
}

/// `tag` quoted, with how the rules read it when that differs.
fn shown(tag: &str, segs: &[&str]) -> String {
    let read = segs.join("/");
    if read == tag {
        format!("{tag:?}")
    } else {
        format!("{tag:?} (read as {read:?})")
    }
}

/// The completion events Salt's minion fires on its own bus when its scheduler or beacons
/// finished a `schedule.*`/`beacons.*` request (`/salt/minion/minion_schedule_add_complete`,
/// `/salt/minion/minion_beacon_list_complete`, ...): saltq's minion has no local bus and
/// forwards them to the master's, where the `id` the master stamps says whose they are. They
/// are three segments long and name no minion (a minion's own tags are
/// `salt/minion/<id>/...`).
fn is_minion_local(segs: &[&str]) -> bool {
    segs.len() == 3
        && under(segs, &["salt", "minion"])
        && ["minion_schedule_", "minion_beacon"]
            .iter()
            .any(|p| segs[2].to_lowercase().starts_with(p))
}

/// Checks that minion `id` may fire `tag`; the error names the tag and the rule that refuses it.
pub fn check_minion_tag(id: &str, tag: &str) -> Result<(), String> {
    let segs = segments(tag).map_err(|e| format!("minion {id} may not fire {tag:?}: {e}"))?;
    let refuse = |rule: String| {
        Err(format!(
            "minion {id} may not fire {}: {rule}",
            shown(tag, &segs)
        ))
    };
    if is_minion_local(&segs) {
        return Ok(());
    }
    match namespace(&segs) {
        None | Some((_, Owner::AnyMinion, _)) => Ok(()),
        Some((ns, Owner::Master, _)) => refuse(format!("tags under {ns} belong to the master")),
        Some((_, Owner::Minion, Some(owner))) if owner == id => Ok(()),
        Some((ns, Owner::Minion, Some(owner))) => {
            refuse(format!("tags under {ns}{owner}/ belong to minion {owner}"))
        }
        Some((ns, Owner::Minion, None)) => {
            refuse(format!("tags under {ns} name the minion they are about"))
        }
    }
}

/// What a client may fire beyond `salt/netapi/hook/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRight {
    /// The master's own `admin` certificate: any tag, as root in Salt.
    Admin,
    /// May run the `event.send` runner: any tag outside the master's namespaces.
    EventSend,
    /// Nothing more: only `salt/netapi/hook/`.
    HookOnly,
}

/// Checks that client `name`, with `right`, may fire `tag`; the error names the tag and the
/// rule that refuses it.
pub fn check_client_tag(name: &str, right: ClientRight, tag: &str) -> Result<(), String> {
    if tag.is_empty() {
        return Err("event tag must not be empty".into());
    }
    if right == ClientRight::Admin {
        return Ok(());
    }
    let segs = segments(tag).map_err(|e| format!("client {name} may not fire {tag:?}: {e}"))?;
    let refuse = |rule: String| {
        Err(format!(
            "client {name} may not fire {}: {rule}",
            shown(tag, &segs)
        ))
    };
    if under(&segs, HOOK_PREFIX) {
        return Ok(());
    }
    match (namespace(&segs), right) {
        (Some((ns, owner, _)), _) => {
            let whose = match owner {
                Owner::Master => "the master",
                Owner::Minion | Owner::AnyMinion => "the minions",
            };
            let what = if ns.ends_with('/') {
                format!("tags under {ns} belong")
            } else {
                format!("{ns} belongs")
            };
            refuse(format!(
                "{what} to {whose}; only the master's admin certificate may fire them"
            ))
        }
        (None, ClientRight::HookOnly) => refuse(
            "without the right to run the event.send runner a client fires only under \
             salt/netapi/hook/"
                .into(),
        ),
        (None, _) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(id: &str, tag: &str, allowed: bool) {
        assert_eq!(
            check_minion_tag(id, tag).is_ok(),
            allowed,
            "{id} firing {tag:?}: {:?}",
            check_minion_tag(id, tag)
        );
    }

    fn check_client(right: ClientRight, tag: &str, allowed: bool) {
        let r = check_client_tag("nobody", right, tag);
        assert_eq!(r.is_ok(), allowed, "{right:?} firing {tag:?}: {r:?}");
    }

    #[test]
    fn a_minion_speaks_only_for_itself() {
        for tag in [
            "salt/auth",
            "salt/key",
            "salt/job/20260101000000000000/ret/m2",
            "salt/job/20260101000000000000/new",
            "salt/run/20260101000000000000/new",
            "salt/wheel/20260101000000000000/ret",
            "salt/cluster/peer/join",
            "salt/presence/present",
            "salt/reactor/error",
            "salt/netapi/hook/deploy",
            "salt/minion/m2/start",
            "salt/minion//start",
            "salt/minion",
            "salt/minion/m10/start",
            "salt/beacon/m2/inotify",
            "salt/beacon",
        ] {
            check("m1", tag, false);
        }
        for tag in [
            "salt/minion/m1/start",
            "salt/minion/m1",
            "myapp/deploy/done",
            "salt/beacon/m1/inotify",
            "salt/beacon/m1/inotify//etc/hosts",
            "salt/authx",
            "minion_start",
            "salt/jobs",
            "salt/...",
            "/salt/minion/minion_schedule_add_complete",
            "/salt/minion/minion_schedule_saved",
            "/salt/minion/minion_beacon_add_complete",
        ] {
            check("m1", tag, true);
        }
        check("m1", "salt/minion/minion_schedule_x/start", false);
        let e = check_minion_tag("m1", "salt/minion/m2/start").unwrap_err();
        assert_eq!(
            e,
            "minion m1 may not fire \"salt/minion/m2/start\": tags under salt/minion/m2/ belong \
             to minion m2"
        );
        let e = check_minion_tag("m1", "salt/auth").unwrap_err();
        assert_eq!(
            e,
            "minion m1 may not fire \"salt/auth\": tags under salt/auth/ belong to the master"
        );
    }

    /// Variants of a refused tag that Salt's reactor would see as other strings but the rules
    /// read as the same tag.
    #[test]
    fn variants_are_read_as_the_tag_they_spell() {
        for tag in [
            "Salt//auth",
            "SALT/AUTH",
            "salt/Auth",
            "/salt/auth",
            "salt/auth/",
            " salt/auth",
            "salt/ auth /x",
            "./salt/auth",
            "salt/./auth",
            "salt//minion/m2/start",
            "salt/minion//m2/start",
            "salt/MINION/m2/start",
            "salt/minion/ m2 /start",
            "salt/beacon//m2/x",
            "Salt/Beacon/m2/x",
            "salt/minion/m1/../m2/start",
            "salt/minion/m1/..",
            "../salt/auth",
            "myapp/../salt/auth",
            "salt/auth\n",
            "salt/minion/m1/start\u{0}",
            "/",
            " ",
            "./.",
        ] {
            check("m1", tag, false);
        }
        // A case variant of a minion id is another minion (ids are case-sensitive in Salt).
        check("m1", "salt/minion/M1/start", false);
        let e = check_minion_tag("m1", "Salt//minion/m2/start").unwrap_err();
        assert_eq!(
            e,
            "minion m1 may not fire \"Salt//minion/m2/start\" (read as \"Salt/minion/m2/start\"): \
             tags under salt/minion/m2/ belong to minion m2"
        );
        let e = check_minion_tag("m1", "salt/minion/m1/../m2").unwrap_err();
        assert_eq!(
            e,
            "minion m1 may not fire \"salt/minion/m1/../m2\": event tags may not have a \"..\" \
             segment"
        );
    }

    #[test]
    fn a_client_fires_under_the_hook_or_with_event_send_never_in_the_masters_namespaces() {
        use ClientRight::*;
        for right in [HookOnly, EventSend] {
            for tag in [
                "salt/netapi/hook",
                "salt/netapi/hook/x",
                "salt//netapi/hook/deploy/",
                "Salt/NetAPI/Hook/x",
            ] {
                check_client(right, tag, true);
            }
            for tag in [
                "salt/auth",
                "Salt//auth",
                "salt/minion/db1/start",
                "salt//minion/db1/start",
                "salt/job/20260101000000000000/ret/db1",
                "salt/beacon/db1/x",
                "salt/netapi/other",
                "salt/netapi/hook/../../auth",
                "salt/netapi/hook/x\ny",
                "minion_start",
                "Minion_Start",
                "",
                "//",
            ] {
                check_client(right, tag, false);
            }
        }
        for tag in ["myapp/deploy", "salt/custom/x", "salt/authx"] {
            check_client(HookOnly, tag, false);
            check_client(EventSend, tag, true);
        }
        for tag in ["salt/minion/db1/start", "salt/auth", "Salt//auth", "x\n"] {
            check_client(Admin, tag, true);
        }
        check_client(Admin, "", false);
        assert_eq!(
            check_client_tag("nobody", HookOnly, "salt/minion/db1/start").unwrap_err(),
            "client nobody may not fire \"salt/minion/db1/start\": tags under salt/minion/ \
             belong to the minions; only the master's admin certificate may fire them"
        );
        assert_eq!(
            check_client_tag("nobody", EventSend, "Salt//auth").unwrap_err(),
            "client nobody may not fire \"Salt//auth\" (read as \"Salt/auth\"): tags under \
             salt/auth/ belong to the master; only the master's admin certificate may fire them"
        );
        assert_eq!(
            check_client_tag("nobody", HookOnly, "myapp/x").unwrap_err(),
            "client nobody may not fire \"myapp/x\": without the right to run the event.send \
             runner a client fires only under salt/netapi/hook/"
        );
    }

    /// One way to spell a tag differently that the rules must read as the same tag.
    #[derive(Debug, Clone)]
    enum Variant {
        /// Doubles the slash before segment `i`.
        EmptySegment(usize),
        /// A leading slash.
        Leading,
        /// A trailing slash.
        Trailing,
        /// Whitespace around segment `i`.
        Spaces(usize, &'static str),
        /// A `.` segment before segment `i`.
        Dot(usize),
        /// `x/..` before segment `i`.
        DotDot(usize),
        /// Segment `i` (one of the first two, which name namespaces) in upper case.
        Upper(usize),
        /// A control character at byte `i` (between characters).
        Control(usize, char),
    }

    fn variant() -> impl Strategy<Value = Variant> {
        prop_oneof![
            (0..8usize).prop_map(Variant::EmptySegment),
            Just(Variant::Leading),
            Just(Variant::Trailing),
            (0..8usize, prop::sample::select(vec![" ", "\u{a0}", "  "]))
                .prop_map(|(i, s)| Variant::Spaces(i, s)),
            (0..8usize).prop_map(Variant::Dot),
            (0..8usize).prop_map(Variant::DotDot),
            (0..2usize).prop_map(Variant::Upper),
            (
                0..64usize,
                prop::sample::select(vec!['\n', '\r', '\0', '\t'])
            )
                .prop_map(|(i, c)| Variant::Control(i, c)),
        ]
    }

    fn apply(tag: &str, v: &Variant) -> String {
        let mut segs: Vec<String> = tag.split('/').map(str::to_owned).collect();
        let n = segs.len();
        match *v {
            Variant::EmptySegment(i) => segs.insert(i % (n + 1), String::new()),
            Variant::Leading => segs.insert(0, String::new()),
            Variant::Trailing => segs.push(String::new()),
            Variant::Spaces(i, s) => {
                let seg = &mut segs[i % n];
                *seg = format!("{s}{seg}{s}");
            }
            Variant::Dot(i) => segs.insert(i % (n + 1), ".".into()),
            Variant::DotDot(i) => {
                let at = i % (n + 1);
                segs.insert(at, "..".into());
                segs.insert(at, "x".into());
            }
            Variant::Upper(i) => {
                if let Some(seg) = segs.get_mut(i) {
                    *seg = seg.to_uppercase();
                }
            }
            Variant::Control(i, c) => {
                let mut t = segs.join("/");
                let at = (0..=t.len())
                    .filter(|&b| t.is_char_boundary(b))
                    .nth(i % (t.chars().count() + 1))
                    .unwrap_or(t.len());
                t.insert(at, c);
                return t;
            }
        }
        segs.join("/")
    }

    /// Tags near the rules: a namespace's (or the hook's, or a minion's) first segments, often,
    /// then segments of any kind.
    fn tag() -> impl Strategy<Value = String> {
        let seg = prop_oneof![
            prop::sample::select(vec![
                "salt",
                "auth",
                "key",
                "job",
                "run",
                "wheel",
                "minion",
                "beacon",
                "netapi",
                "hook",
                "presence",
                "m1",
                "m2",
                "start",
                "minion_start",
                "x",
                "",
                ".",
                "..",
                "Salt",
            ])
            .prop_map(str::to_owned),
            "[a-zA-Z0-9_ .-]{0,6}",
            any::<String>(),
        ];
        let head = prop::sample::select(vec![
            "salt/auth",
            "salt/key",
            "salt/job/20260101000000000000",
            "salt/run",
            "salt/presence",
            "salt/reactor",
            "salt/minion/m1",
            "salt/minion/m2",
            "salt/minion",
            "salt/beacon/m2",
            "salt/beacon/m1",
            "salt/netapi/hook",
            "salt/netapi",
            "minion_start",
            "myapp",
            "salt",
        ])
        .prop_map(str::to_owned);
        prop_oneof![
            (head, prop::collection::vec(seg.clone(), 0..4)).prop_map(|(h, rest)| {
                std::iter::once(h).chain(rest).collect::<Vec<_>>().join("/")
            }),
            prop::collection::vec(seg, 1..6).prop_map(|s| s.join("/")),
        ]
    }

    proptest! {
        #[test]
        fn a_refused_tag_stays_refused_under_any_variant(
            t in tag(),
            vs in prop::collection::vec(variant(), 1..4),
        ) {
            let mut v = t.clone();
            for x in &vs {
                v = apply(&v, x);
            }
            if check_minion_tag("m1", &t).is_err() {
                prop_assert!(check_minion_tag("m1", &v).is_err(), "m1: {t:?} refused, {v:?} not");
            }
            for right in [ClientRight::HookOnly, ClientRight::EventSend] {
                if check_client_tag("c", right, &t).is_err() {
                    prop_assert!(
                        check_client_tag("c", right, &v).is_err(),
                        "{right:?}: {t:?} refused, {v:?} not"
                    );
                }
            }
        }

        /// Whatever a non-admin may fire, its reading is outside the master's namespaces (or
        /// the hook, or the minion's own): no tag slips in under another spelling.
        #[test]
        fn what_is_allowed_reads_outside_the_namespaces(t in tag()) {
            let Ok(segs) = segments(&t) else {
                prop_assert!(check_minion_tag("m1", &t).is_err());
                prop_assert!(check_client_tag("c", ClientRight::EventSend, &t).is_err());
                return Ok(());
            };
            let lower: Vec<String> = segs.iter().map(|s| s.to_lowercase()).collect();
            let lower: Vec<&str> = lower.iter().map(String::as_str).collect();
            let reserved = NAMESPACES.iter().any(|(ns, _)| lower.starts_with(ns));
            let hook = lower.starts_with(HOOK_PREFIX);
            if check_client_tag("c", ClientRight::EventSend, &t).is_ok() {
                prop_assert!(hook || !reserved, "{t:?}");
            }
            if check_client_tag("c", ClientRight::HookOnly, &t).is_ok() {
                prop_assert!(hook, "{t:?}");
            }
            if check_minion_tag("m1", &t).is_ok() && reserved {
                prop_assert!(
                    lower.starts_with(&["minion_start"])
                        || (lower.len() > 2 && ["minion", "beacon"].contains(&lower[1])
                            && segs[2] == "m1"),
                    "{t:?}"
                );
            }
        }
    }
}
