//! The requisite core: every requisite keyword in one table ([`Requisite`], [`Direction`]),
//! and the status a chunk's requisites give it ([`status`]): Salt 3007.8's
//! `State.check_requisite` fold as a pure function of what the states they name left in the
//! run, so each rule is tested without running anything. The runner looks the requisites up,
//! waits for the parallel ones, hands their outcomes here and does what the [`ReqStatus`]
//! says.

/// A requisite kind, in the form a state declares it (`require`, `watch_any`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Requisite {
    /// `require`: run after these, and only if none failed.
    Require,
    /// `require_any`: run if any of these did not fail.
    RequireAny,
    /// `watch`: as `require`, and `mod_watch` when one of them changed something.
    Watch,
    /// `watch_any`: as `require_any`, with `watch`'s `mod_watch`.
    WatchAny,
    /// `prereq`: run (for real) only if these would change something, before they run.
    Prereq,
    /// The mark `requisite_in` leaves on the state a `prereq` names (internal).
    Prerequired,
    /// `onfail`: run only if one of these failed.
    Onfail,
    /// `onfail_any`: run if any of these failed.
    OnfailAny,
    /// `onfail_all`: run only if all of these failed.
    OnfailAll,
    /// `onfail_stop`: kept off the state function, not checked by the runner.
    OnfailStop,
    /// `onchanges`: run only if one of these changed something.
    Onchanges,
    /// `onchanges_any`: run if any of these changed something.
    OnchangesAny,
    /// `listen`: `mod_watch` at the end of the run when one of these changed something.
    Listen,
    /// `use`: take the other state's arguments (compile time only).
    Use,
}

/// Which way a requisite keyword points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Declared on the state that depends (`require: [...]`).
    Own,
    /// Declared on the state depended on, naming the dependants (`require_in: [...]`).
    In,
}

use Direction::{In, Own};
use Requisite::*;

/// Every requisite keyword Salt 3007.8 knows (`STATE_REQUISITE_KEYWORDS`,
/// `STATE_REQUISITE_IN_KEYWORDS`, `use`/`use_in`): the one place their names are written.
const KEYWORDS: &[(&str, Requisite, Direction)] = &[
    ("require", Require, Own),
    ("require_any", RequireAny, Own),
    ("require_in", Require, In),
    ("watch", Watch, Own),
    ("watch_any", WatchAny, Own),
    ("watch_in", Watch, In),
    ("prereq", Prereq, Own),
    ("prereq_in", Prereq, In),
    ("prerequired", Prerequired, Own),
    ("onfail", Onfail, Own),
    ("onfail_any", OnfailAny, Own),
    ("onfail_all", OnfailAll, Own),
    ("onfail_stop", OnfailStop, Own),
    ("onfail_in", Onfail, In),
    ("onchanges", Onchanges, Own),
    ("onchanges_any", OnchangesAny, Own),
    ("onchanges_in", Onchanges, In),
    ("listen", Listen, Own),
    ("listen_in", Listen, In),
    ("use", Use, Own),
    ("use_in", Use, In),
];

impl Requisite {
    /// The requisites `check_requisite` folds, in Salt's order (`prerequired` is added for
    /// a chunk not itself run as a prereq).
    pub const CHECKED: [Requisite; 10] = [
        Require,
        RequireAny,
        Watch,
        WatchAny,
        Prereq,
        Onfail,
        OnfailAny,
        OnfailAll,
        Onchanges,
        OnchangesAny,
    ];

    /// The requisites `call_chunk` names in "The following requisites were not found"
    /// (Salt's list has no `onfail_all`; `prerequired` is added as for [`Self::CHECKED`]).
    pub const REPORTED: [Requisite; 9] = [
        Require,
        RequireAny,
        Watch,
        WatchAny,
        Prereq,
        Onfail,
        OnfailAny,
        Onchanges,
        OnchangesAny,
    ];

    /// The keyword of this requisite in `direction`, if Salt has one (`require_any_in` does
    /// not exist).
    pub fn keyword(self, direction: Direction) -> Option<&'static str> {
        KEYWORDS
            .iter()
            .find(|(_, r, d)| *r == self && *d == direction)
            .map(|(k, _, _)| *k)
    }

    /// The keyword a state declares this requisite with (`require`, `onfail_all`).
    pub fn name(self) -> &'static str {
        self.keyword(Own)
            .expect("every requisite has its own keyword")
    }

    /// The requisite and direction of a keyword, or `None` when `keyword` is none.
    pub fn parse(keyword: &str) -> Option<(Requisite, Direction)> {
        KEYWORDS
            .iter()
            .find(|(k, _, _)| *k == keyword)
            .map(|(_, r, d)| (*r, *d))
    }

    /// Every requisite keyword, both directions, `use` included.
    pub fn all_keywords() -> impl Iterator<Item = &'static str> {
        KEYWORDS.iter().map(|(k, _, _)| *k)
    }

    /// Salt's `STATE_REQUISITE_KEYWORDS`: the requisites a state declares on itself (not
    /// `use`, which only the compiler reads); `extend` adds to their lists.
    pub fn state_keywords() -> impl Iterator<Item = &'static str> {
        KEYWORDS
            .iter()
            .filter(|(_, r, d)| *d == Own && *r != Use)
            .map(|(k, _, _)| *k)
    }

    /// Whether `keyword` is one of [`Self::state_keywords`].
    pub fn is_state_keyword(keyword: &str) -> bool {
        matches!(Self::parse(keyword), Some((r, Own)) if r != Use)
    }

    /// Salt's `req_in` in `requisite_in`: the keywords the compiler turns into extensions
    /// of the states they name: every `_in` form but `listen_in` (read at the end of the
    /// run), `use`, and `prereq` (which marks the state it names `prerequired`).
    pub fn is_req_in(keyword: &str) -> bool {
        match Self::parse(keyword) {
            Some((r, In)) => r != Listen,
            Some((r, Own)) => matches!(r, Use | Prereq),
            None => false,
        }
    }

    /// `onfail`, `onfail_any` or `onfail_all`: a success of theirs is what stops the state.
    fn is_onfail(self) -> bool {
        matches!(self, Onfail | OnfailAny | OnfailAll)
    }

    /// `onchanges` or `onchanges_any`.
    fn is_onchanges(self) -> bool {
        matches!(self, Onchanges | OnchangesAny)
    }

    /// `watch` or `watch_any`.
    fn is_watch(self) -> bool {
        matches!(self, Watch | WatchAny)
    }

    /// An `_any` form, or `onfail` (which Salt folds as "any" too).
    fn folds_as_any(self) -> bool {
        matches!(
            self,
            RequireAny | WatchAny | OnfailAny | OnchangesAny | Onfail
        )
    }
}

/// A state's `result` as Python sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `None` (test mode: it would change something).
    None,
    /// Anything else a state function put there.
    Other,
}

/// What a state named by a requisite left in the run (in `pre` for `prereq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Its `result`.
    pub result: Verdict,
    /// Whether its `changes` are truthy.
    pub changed: bool,
    /// Whether it ran: false only when `__state_ran__` is false (an `onfail`/`onchanges`
    /// state that was skipped).
    pub ran: bool,
}

impl Outcome {
    /// The outcome of a state's result map.
    pub fn of(ret: &serde_json::Map<String, serde_json::Value>) -> Self {
        use serde_json::Value;
        let result = match ret.get("result") {
            Some(Value::Bool(true)) => Verdict::True,
            Some(Value::Bool(false)) => Verdict::False,
            Some(Value::Null) | None => Verdict::None,
            Some(_) => Verdict::Other,
        };
        Outcome {
            result,
            changed: ret
                .get("changes")
                .is_some_and(saltq_semantics::python::truthy),
            ran: ret.get("__state_ran__") != Some(&Value::Bool(false)),
        }
    }
}

/// What a chunk's requisites say it is to do (`check_requisite`'s status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReqStatus {
    /// Run it.
    Met,
    /// A state it needs has not run yet (or names nothing): run those first.
    Unmet,
    /// A state it needs failed: do not run it ("One or more requisite failed").
    Fail,
    /// Run it, then `mod_watch` if it changed nothing itself (a watched state changed).
    Change,
    /// A `prereq` target would change nothing: do not run it ("No changes detected").
    Pre,
    /// No `onfail` target failed: do not run it.
    Onfail,
    /// No `onchanges` target changed: do not run it.
    Onchanges,
}

/// What one requisite's targets showed (Salt's `req_stats`/`fun_stats` strings), as bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Stats(u16);

const UNMET: u16 = 1;
const FAIL: u16 = 1 << 1;
const ONFAIL: u16 = 1 << 2;
const ONCHANGES: u16 = 1 << 3;
const ONCHANGESMET: u16 = 1 << 4;
const CHANGE: u16 = 1 << 5;
const PREMET: u16 = 1 << 6;
const PRE: u16 = 1 << 7;
const MET: u16 = 1 << 8;

impl Stats {
    fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }
    fn add(&mut self, bit: u16) {
        self.0 |= bit;
    }
    fn remove(&mut self, bit: u16) {
        self.0 &= !bit;
    }
}

/// What one target adds to its requisite's stats.
fn target_stats(req: Requisite, target: Option<&Outcome>) -> Stats {
    let mut s = Stats::default();
    let Some(o) = target else {
        s.add(UNMET);
        return s;
    };
    if req.is_onfail() {
        if o.result == Verdict::True {
            s.add(ONFAIL);
            return s;
        }
    } else if o.result == Verdict::False {
        s.add(FAIL);
        return s;
    }
    if req.is_onchanges() {
        s.add(if o.changed { ONCHANGESMET } else { ONCHANGES });
        return s;
    }
    if req.is_watch() && o.changed {
        s.add(CHANGE);
        return s;
    }
    if req == Prereq && o.result == Verdict::None {
        s.add(PREMET);
    }
    if matches!(req, Prereq | Prerequired) && o.result != Verdict::None {
        if req == Prereq {
            s.add(PRE);
        }
    } else if o.ran {
        s.add(MET);
    }
    s
}

/// One requisite's stats over its targets, with the `_any`/`_all` rules applied.
fn requisite_stats(req: Requisite, targets: &[Option<Outcome>]) -> Stats {
    let mut s = Stats::default();
    for t in targets {
        s.add(target_stats(req, t.as_ref()).0);
    }
    if req.folds_as_any() {
        if s.has(MET) || s.has(CHANGE) {
            s.remove(FAIL);
        }
        if s.has(ONCHANGESMET) {
            s.remove(ONCHANGES);
            s.remove(FAIL);
        }
        if s.has(ONFAIL) && s.has(MET) {
            s.remove(ONFAIL);
        }
    }
    // Salt's `_all` rule. It never changes the status: `onfail` is decided before `met`.
    if req == OnfailAll && s.has(ONFAIL) {
        s.remove(MET);
    }
    s
}

/// `check_requisite`'s status: for each requisite of the chunk, what each state it names
/// left in the run (`None` for one not run yet). A requisite naming no state at all is
/// decided before this (Unmet, with Salt's "not found" comment).
pub fn status(reqs: &[(Requisite, Vec<Option<Outcome>>)]) -> ReqStatus {
    let mut all = Stats::default();
    for (req, targets) in reqs {
        all.add(requisite_stats(*req, targets).0);
    }
    if all.has(UNMET) {
        ReqStatus::Unmet
    } else if all.has(FAIL) {
        ReqStatus::Fail
    } else if all.has(PRE) {
        if all.has(PREMET) {
            ReqStatus::Met
        } else {
            ReqStatus::Pre
        }
    } else if all.has(ONFAIL) && !all.has(ONCHANGESMET) {
        ReqStatus::Onfail
    } else if all.has(ONCHANGES) && !all.has(ONCHANGESMET) {
        ReqStatus::Onchanges
    } else if all.has(CHANGE) {
        ReqStatus::Change
    } else if all.has(ONFAIL) {
        ReqStatus::Onfail
    } else {
        ReqStatus::Met
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn done(result: Verdict, changed: bool) -> Option<Outcome> {
        Some(Outcome {
            result,
            changed,
            ran: true,
        })
    }
    const OK: Option<Outcome> = done(Verdict::True, false);
    const CHANGED: Option<Outcome> = done(Verdict::True, true);
    const FAILED: Option<Outcome> = done(Verdict::False, false);
    /// Test mode: would change something.
    const WOULD: Option<Outcome> = done(Verdict::None, true);
    const NOT_YET: Option<Outcome> = None;
    /// An onfail/onchanges state that was skipped (`__state_ran__: False`).
    const SKIPPED: Option<Outcome> = Some(Outcome {
        result: Verdict::True,
        changed: false,
        ran: false,
    });

    fn check(req: Requisite, targets: &[Option<Outcome>], want: ReqStatus) {
        assert_eq!(
            status(&[(req, targets.to_vec())]),
            want,
            "{req:?} over {targets:?}"
        );
    }

    #[test]
    fn table_names_every_keyword_once_both_ways() {
        let all: Vec<&str> = Requisite::all_keywords().collect();
        assert_eq!(all.len(), 21);
        for k in &all {
            assert_eq!(all.iter().filter(|x| *x == k).count(), 1, "{k} twice");
            let (r, d) = Requisite::parse(k).unwrap();
            assert_eq!(r.keyword(d), Some(*k));
        }
        assert_eq!(Requisite::parse("require_any_in"), None);
        assert_eq!(Requisite::parse("requires"), None);
        assert_eq!(Requisite::Onfail.keyword(In), Some("onfail_in"));
        assert_eq!(Requisite::OnfailAll.keyword(In), None);
        let mut salt = vec![
            "onchanges",
            "onchanges_any",
            "onfail",
            "onfail_any",
            "onfail_all",
            "onfail_stop",
            "prereq",
            "prerequired",
            "watch",
            "watch_any",
            "require",
            "require_any",
            "listen",
        ];
        let mut ours: Vec<&str> = Requisite::state_keywords().collect();
        salt.sort_unstable();
        ours.sort_unstable();
        assert_eq!(ours, salt, "STATE_REQUISITE_KEYWORDS");
        assert!(Requisite::is_state_keyword("listen"));
        assert!(!Requisite::is_state_keyword("use"));
        assert!(!Requisite::is_state_keyword("require_in"));
        let mut req_in: Vec<&str> = Requisite::all_keywords()
            .filter(|k| Requisite::is_req_in(k))
            .collect();
        req_in.sort_unstable();
        assert_eq!(
            req_in,
            [
                "onchanges_in",
                "onfail_in",
                "prereq",
                "prereq_in",
                "require_in",
                "use",
                "use_in",
                "watch_in"
            ],
            "requisite_in's req_in"
        );
    }

    #[test]
    fn no_requisites_is_met() {
        assert_eq!(status(&[]), ReqStatus::Met);
        check(Require, &[], ReqStatus::Met);
    }

    #[test]
    fn require() {
        check(Require, &[OK, CHANGED], ReqStatus::Met);
        check(Require, &[OK, FAILED], ReqStatus::Fail);
        check(Require, &[OK, NOT_YET], ReqStatus::Unmet);
        // A test-mode None is not a failure.
        check(Require, &[WOULD], ReqStatus::Met);
    }

    #[test]
    fn require_any_one_failed_one_succeeded_is_met() {
        check(RequireAny, &[FAILED, OK], ReqStatus::Met);
        check(RequireAny, &[FAILED, FAILED], ReqStatus::Fail);
        check(RequireAny, &[FAILED, NOT_YET], ReqStatus::Unmet);
    }

    #[test]
    fn require_any_does_not_excuse_a_failed_require() {
        assert_eq!(
            status(&[(Require, vec![FAILED]), (RequireAny, vec![OK])]),
            ReqStatus::Fail
        );
    }

    #[test]
    fn watch() {
        check(Watch, &[OK], ReqStatus::Met);
        check(Watch, &[OK, CHANGED], ReqStatus::Change);
        check(Watch, &[CHANGED, FAILED], ReqStatus::Fail);
        check(Watch, &[NOT_YET], ReqStatus::Unmet);
    }

    #[test]
    fn watch_any() {
        check(WatchAny, &[FAILED, CHANGED], ReqStatus::Change);
        check(WatchAny, &[FAILED, OK], ReqStatus::Met);
        check(WatchAny, &[FAILED], ReqStatus::Fail);
    }

    #[test]
    fn prereq_runs_only_when_the_target_would_change() {
        // The target's test run said it would change (result None): run for real.
        check(Prereq, &[WOULD], ReqStatus::Met);
        // The test run said nothing to do (True): "No changes detected".
        check(Prereq, &[OK], ReqStatus::Pre);
        // One of two would change: that is enough.
        check(Prereq, &[OK, WOULD], ReqStatus::Met);
        check(Prereq, &[FAILED], ReqStatus::Fail);
        check(Prereq, &[NOT_YET], ReqStatus::Unmet);
    }

    #[test]
    fn prerequired_only_needs_the_prereq_state_run() {
        check(Prerequired, &[OK], ReqStatus::Met);
        check(Prerequired, &[WOULD], ReqStatus::Met);
        check(Prerequired, &[FAILED], ReqStatus::Fail);
        check(Prerequired, &[NOT_YET], ReqStatus::Unmet);
    }

    #[test]
    fn onfail() {
        check(Onfail, &[FAILED], ReqStatus::Met);
        check(Onfail, &[OK], ReqStatus::Onfail);
        // Salt folds onfail as "any": one failure among successes is enough.
        check(Onfail, &[OK, FAILED], ReqStatus::Met);
        check(Onfail, &[NOT_YET], ReqStatus::Unmet);
    }

    #[test]
    fn onfail_with_result_none_in_test_mode_runs() {
        // A None result is neither True (which would stop the state) nor a failure.
        check(Onfail, &[WOULD], ReqStatus::Met);
        check(OnfailAll, &[WOULD], ReqStatus::Met);
    }

    #[test]
    fn onfail_any() {
        check(OnfailAny, &[OK, FAILED], ReqStatus::Met);
        check(OnfailAny, &[OK, OK], ReqStatus::Onfail);
    }

    #[test]
    fn onfail_all_needs_every_target_failed() {
        check(OnfailAll, &[FAILED, FAILED], ReqStatus::Met);
        check(OnfailAll, &[FAILED, OK], ReqStatus::Onfail);
        check(OnfailAll, &[OK, OK], ReqStatus::Onfail);
    }

    #[test]
    fn onchanges() {
        check(Onchanges, &[CHANGED], ReqStatus::Met);
        check(Onchanges, &[OK], ReqStatus::Onchanges);
        check(Onchanges, &[OK, CHANGED], ReqStatus::Met);
        check(Onchanges, &[FAILED, CHANGED], ReqStatus::Fail);
        // Test mode: a state that would change counts as changed.
        check(Onchanges, &[WOULD], ReqStatus::Met);
    }

    #[test]
    fn onchanges_any() {
        check(OnchangesAny, &[FAILED, CHANGED], ReqStatus::Met);
        check(OnchangesAny, &[OK, OK], ReqStatus::Onchanges);
    }

    #[test]
    fn a_skipped_target_satisfies_nothing_but_fails_nothing() {
        // An onchanges state that did not run leaves `__state_ran__: False`: requiring it
        // is neither met nor failed, so the state runs (nothing else said no).
        check(Require, &[SKIPPED], ReqStatus::Met);
        // ...and so it does not excuse a failure among `_any` targets either.
        check(RequireAny, &[FAILED, SKIPPED], ReqStatus::Fail);
        check(RequireAny, &[FAILED, OK], ReqStatus::Met);
        check(OnfailAll, &[SKIPPED, FAILED], ReqStatus::Onfail);
    }

    #[test]
    fn an_unfailed_onfail_stops_the_state_unless_onchanges_met_and_a_watch_changed() {
        assert_eq!(
            status(&[(Onfail, vec![OK]), (Onchanges, vec![CHANGED])]),
            ReqStatus::Onfail
        );
        assert_eq!(
            status(&[(Onfail, vec![OK]), (Watch, vec![CHANGED])]),
            ReqStatus::Onfail
        );
        // Salt checks `change` before the second look at `onfail`, which `onchangesmet`
        // lets through.
        assert_eq!(
            status(&[
                (Onfail, vec![OK]),
                (Onchanges, vec![CHANGED]),
                (Watch, vec![CHANGED])
            ]),
            ReqStatus::Change
        );
    }

    #[test]
    fn order_of_the_statuses() {
        assert_eq!(
            status(&[(Require, vec![FAILED]), (Watch, vec![NOT_YET])]),
            ReqStatus::Unmet
        );
        assert_eq!(
            status(&[(Require, vec![FAILED]), (Prereq, vec![OK])]),
            ReqStatus::Fail
        );
        assert_eq!(
            status(&[(Onchanges, vec![OK]), (Watch, vec![CHANGED])]),
            ReqStatus::Onchanges
        );
        assert_eq!(
            status(&[(Require, vec![OK]), (Watch, vec![CHANGED])]),
            ReqStatus::Change
        );
    }

    #[test]
    fn outcome_of_a_result_map() {
        let m = |v: serde_json::Value| v.as_object().unwrap().clone();
        let o = Outcome::of(&m(serde_json::json!({"result": null, "changes": {"a": 1}})));
        assert_eq!(o, WOULD.unwrap());
        let o = Outcome::of(&m(serde_json::json!({
            "result": true, "changes": {}, "__state_ran__": false
        })));
        assert_eq!(o, SKIPPED.unwrap());
        let o = Outcome::of(&m(serde_json::json!({"result": "yes", "changes": {}})));
        assert_eq!(o.result, Verdict::Other);
    }
}
