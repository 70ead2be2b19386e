//! The scheduler on virtual time: each test feeds `due` a clock and counts the fires.

use chrono::{Duration, NaiveDate, NaiveDateTime};
use serde_json::{Map, Value, json};

use super::cron::Cron;
use super::{Eval, Scheduler, when};

fn t(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
}

fn sched(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn idle(_: &str) -> usize {
    0
}

/// Ticks every `step` from `from` to `to` (Salt's loop), with a sub-second offset as a
/// real loop has; the fire times of each job, by name.
fn run(
    s: &Map<String, Value>,
    from: NaiveDateTime,
    to: NaiveDateTime,
    step: i64,
) -> Vec<(String, NaiveDateTime)> {
    let mut sch = Scheduler::new(1, 7);
    let mut now = from + Duration::milliseconds(250);
    let mut out = Vec::new();
    while now < to {
        let ev = Eval {
            now,
            pillar_whens: None,
            grain_whens: None,
            running: &idle,
        };
        for f in sch.due(s, &ev) {
            out.push((f.name, now));
        }
        now += Duration::seconds(step);
    }
    out
}

#[test]
fn an_interval_fires_one_interval_after_start_then_every_interval() {
    let s = sched(json!({"job1": {"function": "test.ping", "seconds": 2}}));
    let fires = run(&s, t("2026-01-01 00:00:00"), t("2026-01-01 00:00:10"), 1);
    let secs: Vec<_> = fires
        .iter()
        .map(|(_, at)| at.format("%S").to_string())
        .collect();
    assert_eq!(secs, ["02", "04", "06", "08"]);
}

/// Jumps from one wake-up to the next (the earliest next fire time), as a virtual-time
/// driver does: thousands of days cost one evaluation per fire.
fn jump(
    s: &Map<String, Value>,
    from: NaiveDateTime,
    to: NaiveDateTime,
) -> Vec<(String, NaiveDateTime)> {
    let mut sch = Scheduler::new(1, 7);
    let mut now = from + Duration::milliseconds(250);
    let mut out = Vec::new();
    while now < to {
        let ev = Eval {
            now,
            pillar_whens: None,
            grain_whens: None,
            running: &idle,
        };
        for f in sch.due(s, &ev) {
            out.push((f.name, now));
        }
        let next = s
            .keys()
            .filter_map(|k| sch.next_fire_time(k))
            .min()
            .unwrap();
        now = next.max(now + Duration::seconds(1));
    }
    out
}

#[test]
fn three_thousand_days_of_hourly_daily_and_cron_jobs_in_virtual_time() {
    let s = sched(json!({
        "hourly": {"function": "test.ping", "hours": 1},
        "daily": {"function": "test.ping", "days": 1},
        "cron": {"function": "test.ping", "cron": "30 4 * * 1"},
    }));
    let started = std::time::Instant::now();
    let from = t("2026-01-01 00:00:00");
    let to = from + Duration::days(3000);
    let fires = jump(&s, from, to);
    let count = |n: &str| fires.iter().filter(|(j, _)| j == n).count();
    assert_eq!(count("daily"), 2999, "the first day starts the interval");
    assert_eq!(count("hourly"), 3000 * 24 - 1);
    let mondays = (0..3000)
        .filter(|d| (from + Duration::days(*d)).format("%a").to_string() == "Mon")
        .count();
    assert_eq!(count("cron"), mondays);
    assert!(
        fires
            .iter()
            .filter(|(j, _)| j == "cron")
            .all(|(_, at)| at.format("%a %H:%M").to_string() == "Mon 04:30")
    );
    eprintln!(
        "{} fires over 3000 days in {:?}",
        fires.len(),
        started.elapsed()
    );
}

#[test]
fn cron_fields_lists_ranges_steps_and_names() {
    let c = Cron::parse("*/15 9-17 * * mon-fri").unwrap();
    assert_eq!(
        c.next_after(t("2026-12-05 10:00:00")),
        Some(t("2026-12-07 09:00:00")),
        "Saturday goes to Monday"
    );
    assert_eq!(
        c.next_after(t("2026-12-07 09:00:00")),
        Some(t("2026-12-07 09:15:00")),
        "strictly after"
    );
    let c = Cron::parse("0 0 1,15 * *").unwrap();
    assert_eq!(
        c.next_after(t("2026-12-02 00:00:00")),
        Some(t("2026-12-15 00:00:00"))
    );
    // Day of month and day of week both given: either matches (Vixie cron, croniter).
    let c = Cron::parse("0 12 13 * fri").unwrap();
    assert_eq!(
        c.next_after(t("2026-12-07 00:00:00")),
        Some(t("2026-12-11 12:00:00"))
    );
    assert_eq!(
        Cron::parse("0 0 * * 7")
            .unwrap()
            .next_after(t("2026-12-07 00:00:00")),
        Some(t("2026-12-13 00:00:00"))
    );
    for bad in [
        "* * * *",
        "60 * * * *",
        "* 24 * * *",
        "a b c d e",
        "*/0 * * * *",
    ] {
        assert_eq!(Cron::parse(bad), None, "{bad}");
    }
}

#[test]
fn a_bad_cron_string_gives_salts_error_and_never_fires() {
    let s = sched(json!({"job1": {"function": "test.ping", "cron": "61 * * * *"}}));
    let mut sch = Scheduler::new(1, 1);
    let ev = Eval {
        now: t("2026-01-01 00:00:00"),
        pillar_whens: None,
        grain_whens: None,
        running: &idle,
    };
    assert!(sch.due(&s, &ev).is_empty());
    assert_eq!(
        sch.error("job1"),
        Some("Invalid cron string. Ignoring job job1.")
    );
}

#[test]
fn once_fires_once_and_a_bad_date_is_named() {
    let s = sched(json!({"job1": {"function": "test.ping", "once": "2026-01-01T00:00:05"}}));
    let fires = run(&s, t("2026-01-01 00:00:00"), t("2026-01-02 00:00:00"), 1);
    assert_eq!(fires.len(), 1);
    assert_eq!(fires[0].1.format("%H:%M:%S").to_string(), "00:00:05");
    let s = sched(json!({"job1": {"function": "test.ping", "once": "tomorrow"}}));
    let mut sch = Scheduler::new(1, 1);
    let ev = Eval {
        now: t("2026-01-01 00:00:00"),
        pillar_whens: None,
        grain_whens: None,
        running: &idle,
    };
    assert!(sch.due(&s, &ev).is_empty());
    assert_eq!(
        sch.error("job1"),
        Some("Date string could not be parsed: tomorrow, %Y-%m-%dT%H:%M:%S. Ignoring job job1.")
    );
}

#[test]
fn when_fires_each_listed_time_and_looks_names_up_in_whens() {
    let s = sched(json!({"job1": {"function": "test.ping", "when": ["9:00am", "5:00pm"]}}));
    let fires = run(&s, t("2026-03-02 00:00:00"), t("2026-03-05 00:00:00"), 1);
    let at: Vec<_> = fires
        .iter()
        .map(|(_, a)| a.format("%d %H:%M:%S").to_string())
        .collect();
    assert_eq!(
        at,
        [
            "02 09:00:00",
            "02 17:00:00",
            "03 09:00:00",
            "03 17:00:00",
            "04 09:00:00",
            "04 17:00:00"
        ]
    );
    let whens = json!({"tea time": "4:00pm"});
    let s = sched(json!({"job1": {"function": "test.ping", "when": "tea time"}}));
    let mut sch = Scheduler::new(1, 1);
    let mut fired = 0;
    let mut now = t("2026-03-02 15:59:58") + Duration::milliseconds(100);
    for _ in 0..5 {
        let ev = Eval {
            now,
            pillar_whens: Some(&whens),
            grain_whens: None,
            running: &idle,
        };
        fired += sch.due(&s, &ev).len();
        now += Duration::seconds(1);
    }
    assert_eq!(fired, 1);
    let s = sched(json!({"job1": {"function": "test.ping", "when": "half past never"}}));
    let ev = Eval {
        now,
        pillar_whens: None,
        grain_whens: None,
        running: &idle,
    };
    sch.due(&s, &ev);
    assert_eq!(
        sch.error("job1"),
        Some("Invalid date string half past never. Ignoring job job1.")
    );
}

/// Salt's `i in whens`: a pillar `whens` dict without the name falls through to the grains'
/// `whens`, then to the text itself; a changed `whens` value moves the time at once (the
/// parsed times are kept only while the text stays the same).
#[test]
fn when_names_fall_through_the_whens_and_follow_their_changes() {
    let s = sched(json!({"job1": {"function": "test.ping", "when": ["tea time", "5:00pm"]}}));
    let mut pillar = json!({"breakfast": "8:00am"});
    let grains = json!({"tea time": "4:00pm"});
    let mut sch = Scheduler::new(1, 1);
    let mut at = Vec::new();
    let mut now = t("2026-03-02 00:00:00") + Duration::milliseconds(100);
    let end = t("2026-03-04 00:00:00");
    while now < end {
        if now.format("%d %H:%M:%S").to_string() == "03 00:00:00" {
            pillar = json!({"tea time": "3:00pm"});
        }
        let ev = Eval {
            now,
            pillar_whens: Some(&pillar),
            grain_whens: Some(&grains),
            running: &idle,
        };
        for _ in sch.due(&s, &ev) {
            at.push(now.format("%d %H:%M:%S").to_string());
        }
        assert_eq!(sch.error("job1"), None);
        now += Duration::seconds(1);
    }
    assert_eq!(
        at,
        ["02 16:00:00", "02 17:00:00", "03 15:00:00", "03 17:00:00"]
    );
}

#[test]
fn range_runs_inside_and_invert_outside() {
    let inside = sched(
        json!({"job1": {"function": "test.ping", "minutes": 10, "range": {"start": "8:00am", "end": "10:00am"}}}),
    );
    let fires = run(
        &inside,
        t("2026-03-02 00:00:00"),
        t("2026-03-03 00:00:00"),
        5,
    );
    assert!(!fires.is_empty());
    assert!(
        fires
            .iter()
            .all(|(_, a)| *a >= t("2026-03-02 08:00:00") && *a <= t("2026-03-02 10:00:01")),
        "{fires:?}"
    );
    let inverted = sched(
        json!({"job1": {"function": "test.ping", "minutes": 10, "range": {"start": "8:00am", "end": "10:00am", "invert": true}}}),
    );
    let fires = run(
        &inverted,
        t("2026-03-02 00:00:00"),
        t("2026-03-03 00:00:00"),
        5,
    );
    assert!(
        fires
            .iter()
            .all(|(_, a)| *a <= t("2026-03-02 08:00:01") || *a >= t("2026-03-02 10:00:00"))
    );
    assert!(fires.len() > 100);
    let bad = sched(
        json!({"job1": {"function": "test.ping", "seconds": 1, "range": {"start": "10:00am", "end": "8:00am"}}}),
    );
    let mut sch = Scheduler::new(1, 1);
    let ev = Eval {
        now: t("2026-03-02 09:00:02"),
        pillar_whens: None,
        grain_whens: None,
        running: &idle,
    };
    sch.due(&bad, &ev);
    let ev = Eval {
        now: t("2026-03-02 09:00:04"),
        pillar_whens: None,
        grain_whens: None,
        running: &idle,
    };
    assert!(sch.due(&bad, &ev).is_empty());
    assert_eq!(
        sch.error("job1"),
        Some(
            "schedule.handle_func: Invalid range, end must be larger than start. Ignoring job job1."
        )
    );
}

#[test]
fn skip_during_range_then_run_after_it() {
    let s = sched(json!({"job1": {"function": "test.ping", "hours": 1,
        "skip_during_range": {"start": "2:00pm", "end": "3:30pm"}, "run_after_skip_range": true}}));
    let fires = run(&s, t("2026-03-02 12:00:00"), t("2026-03-02 17:30:00"), 1);
    let at: Vec<_> = fires
        .iter()
        .map(|(_, a)| a.format("%H:%M:%S").to_string())
        .collect();
    assert_eq!(
        at,
        ["13:00:00", "15:30:01", "16:30:01"],
        "14:00 and 15:00 skipped, one run right after"
    );
}

#[test]
fn splay_spreads_the_fires_within_its_bounds() {
    let s = sched(json!({"job1": {"function": "test.ping", "seconds": 60, "splay": 30}}));
    let mut offsets = std::collections::BTreeSet::new();
    for seed in 0..200u64 {
        let mut sch = Scheduler::new(1, seed);
        let mut now = t("2026-01-01 00:00:00") + Duration::milliseconds(10);
        while now < t("2026-01-01 00:02:00") {
            let ev = Eval {
                now,
                pillar_whens: None,
                grain_whens: None,
                running: &idle,
            };
            if !sch.due(&s, &ev).is_empty() {
                offsets.insert((now - t("2026-01-01 00:01:00")).num_seconds());
                break;
            }
            now += Duration::seconds(1);
        }
    }
    assert!(offsets.iter().all(|o| (1..=30).contains(o)), "{offsets:?}");
    assert!(offsets.len() >= 25, "spread over the window: {offsets:?}");
    let s = sched(
        json!({"job1": {"function": "test.ping", "seconds": 60, "splay": {"start": 10, "end": 15}}}),
    );
    let fires = run(&s, t("2026-01-01 00:00:00"), t("2026-01-01 00:01:30"), 1);
    let off = (fires[0].1 - t("2026-01-01 00:01:00")).num_seconds();
    assert!((10..=15).contains(&off), "{off}");
}

#[test]
fn until_after_enabled_and_maxrunning() {
    let until = sched(
        json!({"job1": {"function": "test.ping", "seconds": 10, "until": "2026-01-01 00:02:00"}}),
    );
    let fires = run(
        &until,
        t("2026-01-01 00:00:00"),
        t("2026-01-01 00:05:00"),
        1,
    );
    assert!(fires.iter().all(|(_, a)| *a < t("2026-01-01 00:02:00")));
    assert_eq!(fires.len(), 11);
    let after = sched(
        json!({"job1": {"function": "test.ping", "seconds": 10, "after": "2026-01-01 00:01:00"}}),
    );
    let fires = run(
        &after,
        t("2026-01-01 00:00:00"),
        t("2026-01-01 00:02:00"),
        1,
    );
    assert!(fires.iter().all(|(_, a)| *a > t("2026-01-01 00:01:00")));
    assert_eq!(fires.len(), 6);
    // Salt checks `until`, then `after`, each setting `run`: with both, `after` decides.
    let both = sched(json!({"job1": {"function": "test.ping", "seconds": 10,
        "after": "2026-01-01 00:01:00", "until": "2026-01-01 00:02:00"}}));
    let fires = run(&both, t("2026-01-01 00:00:00"), t("2026-01-01 00:03:00"), 1);
    assert!(fires.iter().any(|(_, a)| *a > t("2026-01-01 00:02:00")));
    let off = sched(json!({"job1": {"function": "test.ping", "seconds": 1, "enabled": false}}));
    assert!(run(&off, t("2026-01-01 00:00:00"), t("2026-01-01 00:01:00"), 1).is_empty());
    let all_off = sched(json!({"enabled": false, "job1": {"function": "test.ping", "seconds": 1}}));
    assert!(
        run(
            &all_off,
            t("2026-01-01 00:00:00"),
            t("2026-01-01 00:01:00"),
            1
        )
        .is_empty()
    );
    let s = sched(json!({"job1": {"function": "test.ping", "seconds": 1, "maxrunning": 2}}));
    let mut sch = Scheduler::new(1, 1);
    let two = |_: &str| 2usize;
    let ev = Eval {
        now: t("2026-01-01 00:00:00"),
        pillar_whens: None,
        grain_whens: None,
        running: &two,
    };
    sch.due(&s, &ev);
    let ev = Eval {
        now: t("2026-01-01 00:00:02"),
        pillar_whens: None,
        grain_whens: None,
        running: &two,
    };
    assert!(sch.due(&s, &ev).is_empty());
    assert_eq!(sch.skip_reason("job1"), Some("maxrunning"));
    let one = |_: &str| 1usize;
    let ev = Eval {
        now: t("2026-01-01 00:00:03"),
        pillar_whens: None,
        grain_whens: None,
        running: &one,
    };
    assert_eq!(sch.due(&s, &ev).len(), 1);
}

#[test]
fn run_on_start_fires_at_the_first_evaluation() {
    let s = sched(
        json!({"__mine_interval": {"function": "mine.update", "minutes": 60, "run_on_start": true, "maxrunning": 2}}),
    );
    let fires = run(&s, t("2026-01-01 00:00:00"), t("2026-01-01 02:30:00"), 1);
    let at: Vec<_> = fires
        .iter()
        .map(|(_, a)| a.format("%H:%M").to_string())
        .collect();
    assert_eq!(at, ["00:00", "01:00", "02:00"]);
}

/// The wall clock of a zone with US-style DST (UTC-5, UTC-4 from the second Sunday of
/// March 2:00 to the first Sunday of November 2:00), as the host's local time moves.
fn wall(utc: NaiveDateTime) -> NaiveDateTime {
    let y = utc.date().format("%Y").to_string().parse().unwrap();
    let nth_sunday = |m: u32, n: u32| {
        let first = NaiveDate::from_ymd_opt(y, m, 1).unwrap();
        let ahead = (7 - first.format("%w").to_string().parse::<u32>().unwrap()) % 7;
        first + Duration::days((ahead + 7 * (n - 1)) as i64)
    };
    let start = nth_sunday(3, 2).and_hms_opt(7, 0, 0).unwrap();
    let end = nth_sunday(11, 1).and_hms_opt(6, 0, 0).unwrap();
    utc - Duration::hours(if utc >= start && utc < end { 4 } else { 5 })
}

#[test]
fn dst_changes_move_the_wall_clock_under_the_schedule_as_under_salt() {
    let s = sched(
        json!({"daily": {"function": "test.ping", "cron": "30 2 * * *"},
                         "one": {"function": "test.ping", "cron": "30 1 * * *"}}),
    );
    let mut sch = Scheduler::new(1, 1);
    let mut fires = Vec::new();
    for (from, to) in [
        ("2026-03-07 00:00:00", "2026-03-10 00:00:00"),
        ("2026-10-31 00:00:00", "2026-11-03 12:00:00"),
    ] {
        let mut utc = t(from) + Duration::milliseconds(300);
        while utc < t(to) {
            let now = wall(utc);
            let ev = Eval {
                now,
                pillar_whens: None,
                grain_whens: None,
                running: &idle,
            };
            fires.extend(sch.due(&s, &ev).into_iter().map(|f| (f.name, now)));
            utc += Duration::seconds(20);
        }
    }
    let on = |d: &str, n: &str| {
        fires
            .iter()
            .filter(|(j, a)| j == n && a.format("%m-%d").to_string() == d)
            .count()
    };
    // 2:30 does not exist on 8 March: the late run comes at 3:00, once.
    assert_eq!(on("03-08", "daily"), 1);
    let late = fires
        .iter()
        .find(|(j, a)| j == "daily" && a.format("%m-%d").to_string() == "03-08")
        .unwrap();
    assert_eq!(late.1.format("%H:%M").to_string(), "03:00");
    // 1:30 happens twice on 1 November: one run.
    assert_eq!(on("11-01", "one"), 1);
    assert_eq!(on("11-02", "one"), 1);
}

#[test]
fn dateutil_forms() {
    let today = NaiveDate::from_ymd_opt(2026, 12, 7).unwrap(); // a Monday
    let p = |s: &str| when::parse(s, today).map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string());
    assert_eq!(p("5:00pm").as_deref(), Some("2026-12-07 17:00:00"));
    assert_eq!(p("5pm").as_deref(), Some("2026-12-07 17:00:00"));
    assert_eq!(p("12:30am").as_deref(), Some("2026-12-07 00:30:00"));
    assert_eq!(p("Thursday 3:00pm").as_deref(), Some("2026-12-10 15:00:00"));
    assert_eq!(p("Monday 5:00pm").as_deref(), Some("2026-12-07 17:00:00"));
    assert_eq!(
        p("11/29/2027 4:00pm").as_deref(),
        Some("2027-11-29 16:00:00")
    );
    assert_eq!(
        p("2027-01-02 03:04:05").as_deref(),
        Some("2027-01-02 03:04:05")
    );
    assert_eq!(
        p("2027-01-02T03:04:05").as_deref(),
        Some("2027-01-02 03:04:05")
    );
    assert_eq!(
        p("Jan 5 2027 10:00").as_deref(),
        Some("2027-01-05 10:00:00")
    );
    assert_eq!(p("13:00pm"), None);
    assert_eq!(p("soon"), None);
}
